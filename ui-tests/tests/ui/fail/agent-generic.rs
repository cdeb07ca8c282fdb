//! An agent cannot be generic: the executor calls it with one concrete input.

use workflow_core::prelude::*;

#[workflow(entry = writer, output = String)]
mod wf {
    use super::*;

    #[agent(to = [END])]
    async fn writer<T>(_topic: String, _cx: writer::Context<'_>) -> Result<writer::Next, Reject> {
        todo!()
    }
}

fn main() {}
