//! `auditor` is declared but no agent hands off to it: its checks would never run.

use workflow_core::prelude::*;

#[workflow(entry = writer, output = String)]
mod wf {
    use super::*;

    #[agent(to = [END])]
    async fn writer(_input: String, _cx: writer::Context<'_>) -> Result<writer::Next, Reject> {
        todo!()
    }

    #[agent(to = [END])]
    async fn auditor(_input: String, _cx: auditor::Context<'_>) -> Result<auditor::Next, Reject> {
        todo!()
    }
}

fn main() {}
