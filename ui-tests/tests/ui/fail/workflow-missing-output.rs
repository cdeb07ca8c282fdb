//! No `output = ..`: the workflow does not say what a run ends with.

use workflow_core::prelude::*;

#[workflow(entry = writer)]
mod wf {
    use super::*;

    #[agent(to = [END])]
    async fn writer(_input: String, _cx: writer::Context<'_>) -> Result<writer::Next, Reject> {
        todo!()
    }
}

fn main() {}
