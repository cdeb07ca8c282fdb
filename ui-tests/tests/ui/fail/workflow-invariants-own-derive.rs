//! `#[invariants]` derives serde and schemars itself.

use workflow_core::prelude::*;

#[workflow(entry = writer, output = String)]
mod wf {
    use super::*;

    #[invariants]
    #[derive(Debug, serde::Serialize)]
    pub struct Root {
        pub tenant: String,
    }

    #[agent(to = [END])]
    async fn writer(topic: String, _cx: writer::Context<'_>) -> Result<writer::Next, Reject> {
        Ok(writer::Next::End(topic))
    }
}

fn main() {}
