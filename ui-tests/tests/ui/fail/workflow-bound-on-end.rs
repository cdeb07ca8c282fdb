//! A loop bound on `END`: a run ends once.

use workflow_core::prelude::*;

#[workflow(entry = writer, output = String)]
mod wf {
    use super::*;

    #[agent(to = [END(max = 2)])]
    async fn writer(_input: String, _cx: writer::Context<'_>) -> Result<writer::Next, Reject> {
        todo!()
    }
}

fn main() {}
