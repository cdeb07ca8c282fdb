//! Two `#[agent(..)]` attributes on one function.

use workflow_core::prelude::*;

#[workflow(entry = writer, output = String)]
mod wf {
    use super::*;

    #[agent(to = [END])]
    #[agent(timeout_ms = 100)]
    async fn writer(topic: String, _cx: writer::Context<'_>) -> Result<writer::Next, Reject> {
        Ok(writer::Next::End(topic))
    }
}

fn main() {}
