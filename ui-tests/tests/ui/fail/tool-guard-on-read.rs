//! A guard on a tool that only reads: a guard stops a tool before it
//! changes the world, and a read tool changes nothing.

use workflow_core::prelude::*;

#[workflow(entry = terraform, output = String)]
mod wf {
    use super::*;

    fn short(input: &String, _root: &()) -> Result<(), String> {
        if input.len() > 10 {
            return Err("too long".into());
        }
        Ok(())
    }

    #[tool(effect = read, guard = short)]
    async fn lookup(_input: String, _deps: &()) -> Result<String, ToolError> {
        todo!()
    }

    #[agent(tools = [lookup], to = [END])]
    async fn terraform(
        _input: String,
        _cx: terraform::Context<'_>,
    ) -> Result<terraform::Next, Reject> {
        todo!()
    }
}

fn main() {}
