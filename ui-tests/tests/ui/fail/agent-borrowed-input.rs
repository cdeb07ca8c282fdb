//! Inputs and outputs cross a seam and are recorded: they cannot borrow.

use workflow_core::prelude::*;

#[workflow(entry = writer, output = String)]
mod wf {
    use super::*;

    #[tool(effect = read)]
    async fn shout(text: &'static str, _deps: &()) -> Result<String, ToolError> {
        Ok(text.to_uppercase())
    }

    #[agent(tools = [shout], to = [END])]
    async fn writer(topic: &str, _cx: writer::Context<'_>) -> Result<writer::Next, Reject> {
        Ok(writer::Next::End(topic.to_owned()))
    }
}

fn main() {}
