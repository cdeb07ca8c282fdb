//! A user item named like an item `#[workflow]` generates in the module.

use workflow_core::prelude::*;

#[workflow(entry = writer, output = String)]
mod wf {
    use super::*;

    /// Clashes with the generated `State` enum.
    pub struct State {
        pub step: u32,
    }

    /// Clashes with the module generated for agent `writer`.
    pub mod writer {}

    #[agent(to = [END])]
    async fn writer(topic: String, _cx: writer::Context<'_>) -> Result<writer::Next, Reject> {
        Ok(writer::Next::End(topic))
    }
}

fn main() {}
