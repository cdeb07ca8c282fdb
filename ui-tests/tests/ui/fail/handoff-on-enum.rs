//! `#[handoff]` on an enum: a handoff is a struct whose fields carry the parts.

use workflow_core::prelude::*;

#[workflow(entry = lead, output = String)]
mod wf {
    use super::*;

    #[agent(owns = [Act], to = [END])]
    async fn lead(_input: String, _cx: lead::Context<'_>) -> Result<lead::Next, Reject> {
        todo!()
    }

    #[handoff]
    pub enum Task {
        Review(Operation),
        Approve(Operation),
    }
}

fn main() {}
