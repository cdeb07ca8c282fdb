//! An agent must be an `async fn`.

use workflow_core::prelude::*;

#[workflow(entry = writer, output = String)]
mod wf {
    use super::*;

    #[agent(to = [END])]
    fn writer(topic: String, _cx: writer::Context<'_>) -> Result<writer::Next, Reject> {
        Ok(writer::Next::End(topic))
    }
}

fn main() {}
