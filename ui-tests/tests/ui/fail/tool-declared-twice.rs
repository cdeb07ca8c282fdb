//! Two tools with one name.

use workflow_core::prelude::*;

#[workflow(entry = researcher, output = String)]
mod wf {
    use super::*;

    #[tool(effect = read)]
    async fn search(_query: String, _deps: &()) -> Result<String, ToolError> {
        todo!()
    }

    #[tool(effect = read)]
    async fn search(_query: String, _deps: &()) -> Result<Vec<String>, ToolError> {
        todo!()
    }

    #[agent(tools = [search], to = [END])]
    async fn researcher(
        _input: String,
        _cx: researcher::Context<'_>,
    ) -> Result<researcher::Next, Reject> {
        todo!()
    }
}

fn main() {}
