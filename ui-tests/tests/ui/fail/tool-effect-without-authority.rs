//! A tool that changes the world (`effect = write`) but needs no authority:
//! nothing would make it have exactly one owner.

use workflow_core::prelude::*;

#[workflow(entry = terraform, output = String)]
mod wf {
    use super::*;

    #[tool(effect = write)]
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
