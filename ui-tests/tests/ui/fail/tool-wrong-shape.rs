//! A tool is `async fn name(input: Input, deps: &Deps) -> Result<Output, ToolError>`:
//! `lookup` is not async, `search` takes no deps.

use workflow_core::prelude::*;

#[workflow(entry = writer, output = String)]
mod wf {
    use super::*;

    #[tool(effect = read)]
    fn lookup(_input: String, _deps: &()) -> Result<String, ToolError> {
        todo!()
    }

    #[tool(effect = read)]
    async fn search(_input: String) -> Result<String, ToolError> {
        todo!()
    }

    #[agent(tools = [lookup, search], to = [END])]
    async fn writer(_input: String, _cx: writer::Context<'_>) -> Result<writer::Next, Reject> {
        todo!()
    }
}

fn main() {}
