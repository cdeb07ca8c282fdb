//! `#[pin]` needs root invariants: a handoff declared outside a workflow
//! module, and a workflow without `#[invariants]`.

use workflow_core::prelude::*;

#[handoff]
pub struct Outside {
    #[operation]
    pub op: Operation,
    #[authority]
    pub scope: Scope<Go>,
    #[evidence]
    pub evidence: Vec<Evidence>,
    #[uncertainty]
    pub open: Vec<Uncertainty>,
    #[stop]
    pub stop: StopWhen,
    #[pin(tenant)]
    pub owner: String,
}

#[derive(Clone, Copy, Default)]
pub struct Go;
impl workflow_core::Authority for Go {
    const NAME: &'static str = "Go";
}

#[workflow(entry = intake, output = String)]
mod wf {
    use super::*;

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
        pub owner: String,
    }

    #[agent(to = [worker])]
    async fn intake(input: String, _cx: intake::Context<'_>) -> Result<intake::Next, Reject> {
        Err(Reject::because(input))
    }

    #[agent(owns = [Work], to = [END])]
    async fn worker(task: Task, _cx: worker::Context<'_>) -> Result<worker::Next, Reject> {
        Ok(worker::Next::End(task.owner))
    }
}

fn main() {}
