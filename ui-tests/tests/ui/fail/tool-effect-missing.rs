//! Two tools that do not declare their effect: one with other arguments,
//! one bare `#[tool]`. Neither defaults to `read`.

use workflow_core::prelude::*;

#[workflow(entry = terraform, output = String)]
mod wf {
    use super::*;

    #[tool(needs = Apply)]
    async fn apply_plan(_input: String, _deps: &()) -> Result<String, ToolError> {
        todo!()
    }

    #[tool]
    async fn lookup(_input: String, _deps: &()) -> Result<String, ToolError> {
        todo!()
    }

    #[agent(owns = [Apply], tools = [apply_plan, lookup], to = [END])]
    async fn terraform(
        _input: String,
        _cx: terraform::Context<'_>,
    ) -> Result<terraform::Next, Reject> {
        todo!()
    }
}

fn main() {}
