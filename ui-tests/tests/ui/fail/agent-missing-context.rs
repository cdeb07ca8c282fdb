//! An agent takes its input and its context: this one forgets the context.

use workflow_core::prelude::*;

#[workflow(entry = writer, output = String)]
mod wf {
    use super::*;

    #[agent(to = [END])]
    async fn writer(_topic: String) -> Result<writer::Next, Reject> {
        todo!()
    }
}

fn main() {}
