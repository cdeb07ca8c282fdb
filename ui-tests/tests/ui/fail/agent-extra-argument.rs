//! An agent takes exactly its input and its context: this one adds a third argument.

use workflow_core::prelude::*;

#[workflow(entry = writer, output = String)]
mod wf {
    use super::*;

    #[agent(to = [END])]
    async fn writer(
        _topic: String,
        _cx: writer::Context<'_>,
        _strict: bool,
    ) -> Result<writer::Next, Reject> {
        todo!()
    }
}

fn main() {}
