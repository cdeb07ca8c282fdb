//! `#[evidence]` marks two fields: which one is the contract part?

use workflow_core::prelude::*;

#[workflow(entry = lead, output = String)]
mod wf {
    use super::*;

    #[agent(owns = [Act], to = [END])]
    async fn lead(_input: String, _cx: lead::Context<'_>) -> Result<lead::Next, Reject> {
        todo!()
    }

    #[handoff]
    pub struct Task {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Act>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[evidence]
        pub more_evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
    }
}

fn main() {}
