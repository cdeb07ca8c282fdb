//! A pinned field whose type does not compare with the root field's:
//! rustc's error, at the pin.

use workflow_core::prelude::*;

#[workflow(entry = intake, output = String)]
mod wf {
    use super::*;

    #[invariants]
    pub struct Root {
        pub tenant: String,
    }

    #[handoff]
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
        #[pin(tenant)]
        pub owner: u32,
    }

    #[agent(to = [worker])]
    async fn intake(input: String, _cx: intake::Context<'_>) -> Result<intake::Next, Reject> {
        Err(Reject::because(input))
    }

    #[agent(owns = [Work], to = [END])]
    async fn worker(task: Task, _cx: worker::Context<'_>) -> Result<worker::Next, Reject> {
        Ok(worker::Next::End(task.op.detail.into_owned()))
    }
}

fn main() {}
