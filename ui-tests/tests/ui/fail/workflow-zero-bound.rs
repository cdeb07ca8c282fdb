//! A loop bound, a hop cap and a timeout of zero: each is reported.

use workflow_core::prelude::*;

#[workflow(entry = writer, output = String, max_hops = 0)]
mod wf {
    use super::*;

    #[handoff]
    pub struct Draft {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Approve>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
    }

    #[handoff]
    pub struct Revision {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Write>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
    }

    #[agent(owns = [Write], to = [reviewer], timeout_ms = 0)]
    async fn writer(_input: Revision, _cx: writer::Context<'_>) -> Result<writer::Next, Reject> {
        todo!()
    }

    #[agent(owns = [Approve], to = [writer(max = 0), END])]
    async fn reviewer(_input: Draft, _cx: reviewer::Context<'_>) -> Result<reviewer::Next, Reject> {
        todo!()
    }
}

fn main() {}
