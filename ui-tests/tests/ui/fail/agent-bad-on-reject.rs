//! A misspelt rejection route, and a return to the sender without a bound.

use workflow_core::prelude::*;

#[workflow(entry = intake, output = String)]
mod wf {
    use super::*;

    #[handoff]
    pub struct Task {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Review>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
    }

    #[agent(owns = [Intake], to = [reviewer], on_reject = escalte)]
    async fn intake(_input: String, _cx: intake::Context<'_>) -> Result<intake::Next, Reject> {
        todo!()
    }

    #[agent(owns = [Review], to = [END], on_reject = sender)]
    async fn reviewer(_task: Task, _cx: reviewer::Context<'_>) -> Result<reviewer::Next, Reject> {
        todo!()
    }
}

fn main() {}
