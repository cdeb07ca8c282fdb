//! An authority listed twice in one agent's `owns = [...]`, and a tool listed
//! twice in its `tools = [...]`.

use workflow_core::prelude::*;

#[workflow(entry = terraform, output = String)]
mod wf {
    use super::*;

    #[tool(needs = Apply, effect = read)]
    async fn apply_plan(_input: String, _deps: &()) -> Result<String, ToolError> {
        todo!()
    }

    #[agent(owns = [Apply, Apply], tools = [apply_plan, apply_plan], to = [END])]
    async fn terraform(
        _input: String,
        _cx: terraform::Context<'_>,
    ) -> Result<terraform::Next, Reject> {
        todo!()
    }
}

fn main() {}
