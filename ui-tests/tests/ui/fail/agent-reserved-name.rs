//! An agent named like a module the workflow generates.

use workflow_core::prelude::*;

#[workflow(entry = tools, output = String)]
mod wf {
    use super::*;

    #[agent(to = [END])]
    async fn tools(topic: String, _cx: tools::Context<'_>) -> Result<tools::Next, Reject> {
        Ok(tools::Next::End(topic))
    }
}

fn main() {}
