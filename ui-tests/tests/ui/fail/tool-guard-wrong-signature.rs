//! A guard whose input is not the tool's input: reported on the guard's
//! path in `#[tool(..)]`.

use workflow_core::prelude::*;

#[workflow(entry = terraform, output = String)]
mod wf {
    use super::*;

    fn at_most_five(routes: &u32, _root: &()) -> Result<(), String> {
        if *routes > 5 {
            return Err("too many routes".into());
        }
        Ok(())
    }

    #[tool(needs = Apply, effect = write, guard = at_most_five)]
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
