//! A generic handoff: its published schema must name one concrete type.

use workflow_core::prelude::*;

#[workflow(entry = lead, output = String)]
mod wf {
    use super::*;

    #[agent(owns = [Act], to = [END])]
    async fn lead(_input: String, _cx: lead::Context<'_>) -> Result<lead::Next, Reject> {
        todo!()
    }

    #[handoff]
    pub struct Task<T> {
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
        pub data: T,
    }
}

fn main() {}
