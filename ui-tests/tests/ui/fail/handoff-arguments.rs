//! `#[handoff]` takes only its own arguments (`unbounded_stop` and
//! `uncited_evidence` are flags, without a value), and the part markers
//! take none.

use workflow_core::prelude::*;

#[workflow(entry = lead, output = String)]
mod wf {
    use super::*;

    #[agent(owns = [Act], to = [END])]
    async fn lead(_input: String, _cx: lead::Context<'_>) -> Result<lead::Next, Reject> {
        todo!()
    }

    #[handoff(strict)]
    pub struct Task {
        #[operation(name = "review")]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Act>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
    }

    #[handoff(unbounded_stop = true)]
    pub struct Watch {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Act>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
    }

    #[handoff(uncited_evidence = true)]
    pub struct Note {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Act>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
    }
}

fn main() {}
