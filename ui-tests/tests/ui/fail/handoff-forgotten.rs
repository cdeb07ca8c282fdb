//! A struct with contract part markers but no `#[handoff]`, used as an
//! agent's input: one error, on the struct, saying to add `#[handoff]`
//! (the short form's `#[contract]` marker too).

use workflow_core::prelude::*;

#[workflow(entry = intake, output = String)]
mod wf {
    use super::*;

    pub struct Task {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Work>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
        pub note: String,
    }

    pub struct Short {
        #[contract]
        pub contract: Contract<authority::Work>,
    }

    #[agent(to = [worker])]
    async fn intake(input: String, _cx: intake::Context<'_>) -> Result<intake::Next, Reject> {
        Err(Reject::because(input))
    }

    #[agent(owns = [Work], to = [END])]
    async fn worker(task: Task, _cx: worker::Context<'_>) -> Result<worker::Next, Reject> {
        Ok(worker::Next::End(task.note))
    }
}

fn main() {}
