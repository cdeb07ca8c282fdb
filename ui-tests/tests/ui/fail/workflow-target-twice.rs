//! The same receiver listed twice in `to = [...]`.

use workflow_core::prelude::*;

#[workflow(entry = writer, output = String)]
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

    #[agent(to = [reviewer, reviewer])]
    async fn writer(_input: String, _cx: writer::Context<'_>) -> Result<writer::Next, Reject> {
        todo!()
    }

    #[agent(owns = [Approve], to = [END])]
    async fn reviewer(_input: Draft, _cx: reviewer::Context<'_>) -> Result<reviewer::Next, Reject> {
        todo!()
    }
}

fn main() {}
