//! The entry names no agent of the workflow (a typo of `planner`).

use workflow_core::prelude::*;

#[workflow(entry = planer, output = String)]
mod wf {
    use super::*;

    #[agent(to = [END])]
    async fn planner(_input: String, _cx: planner::Context<'_>) -> Result<planner::Next, Reject> {
        todo!()
    }
}

fn main() {}
