//! Misspelt values of a tool's effect class and fallback policy.

use workflow_core::prelude::*;

#[workflow(entry = terraform, output = String)]
mod wf {
    use super::*;

    #[tool(needs = Apply, effect = destroy, then = retry)]
    async fn apply_plan(_input: String, _deps: &()) -> Result<String, ToolError> {
        todo!()
    }

    #[agent(owns = [Apply], tools = [apply_plan], to = [END])]
    async fn terraform(
        _input: String,
        _cx: terraform::Context<'_>,
    ) -> Result<terraform::Next, Reject> {
        todo!()
    }
}

fn main() {}
