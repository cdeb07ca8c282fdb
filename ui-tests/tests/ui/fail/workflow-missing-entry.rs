//! No `entry = ..`: the workflow does not say which agent starts a run.

use workflow_core::prelude::*;

#[workflow(output = String)]
mod wf {
    use super::*;

    #[agent(to = [END])]
    async fn writer(_input: String, _cx: writer::Context<'_>) -> Result<writer::Next, Reject> {
        todo!()
    }
}

fn main() {}
