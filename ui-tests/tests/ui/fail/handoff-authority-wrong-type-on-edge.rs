//! An `#[authority]` part that is not a `Scope<A>` is reported once, on the
//! field: the edges that carry the handoff (an agent's `to = [..]`, the
//! caller's edge into the entry) do not repeat it.

use workflow_core::prelude::*;

#[workflow(entry = lead, output = String)]
mod wf {
    use super::*;

    #[agent(owns = [Act], to = [worker])]
    async fn lead(_input: String, _cx: lead::Context<'_>) -> Result<lead::Next, Reject> {
        todo!()
    }

    #[agent(to = [END])]
    async fn worker(_input: Task, _cx: worker::Context<'_>) -> Result<worker::Next, Reject> {
        todo!()
    }

    #[handoff]
    pub struct Task {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: String,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
    }
}

#[workflow(entry = first, output = String)]
mod entry_input {
    use super::*;

    #[agent(owns = [Act], to = [END])]
    async fn first(_input: Job, _cx: first::Context<'_>) -> Result<first::Next, Reject> {
        todo!()
    }

    #[handoff]
    pub struct Job {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: u8,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
    }
}

fn main() {}
