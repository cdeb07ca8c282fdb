//! Rejected handoffs used as an agent's input: a generic one, one on an
//! enum, a tuple struct, one missing a part. Each shows its own error only,
//! not a second one saying "mark the type `#[handoff]`" on the input.

use workflow_core::prelude::*;

#[workflow(entry = lead, output = String)]
mod generic {
    use super::*;

    #[agent(owns = [Lead], to = [worker])]
    async fn lead(_input: String, _cx: lead::Context<'_>) -> Result<lead::Next, Reject> {
        todo!()
    }

    #[agent(owns = [Act], to = [END])]
    async fn worker(_input: Task<u32>, _cx: worker::Context<'_>) -> Result<worker::Next, Reject> {
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

#[workflow(entry = lead, output = String)]
mod on_enum {
    use super::*;

    #[agent(owns = [Lead], to = [worker])]
    async fn lead(_input: String, _cx: lead::Context<'_>) -> Result<lead::Next, Reject> {
        todo!()
    }

    #[agent(owns = [Act], to = [END])]
    async fn worker(_input: Task, _cx: worker::Context<'_>) -> Result<worker::Next, Reject> {
        todo!()
    }

    #[handoff]
    pub enum Task {
        Review(Operation),
        Approve(Operation),
    }
}

#[workflow(entry = lead, output = String)]
mod missing {
    use super::*;

    #[agent(owns = [Lead], to = [worker])]
    async fn lead(_input: String, _cx: lead::Context<'_>) -> Result<lead::Next, Reject> {
        todo!()
    }

    #[agent(owns = [Act], to = [END])]
    async fn worker(_input: Task, _cx: worker::Context<'_>) -> Result<worker::Next, Reject> {
        todo!()
    }

    #[handoff]
    pub struct Task {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Act>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
    }
}

#[workflow(entry = lead, output = String)]
mod tuple {
    use super::*;

    #[agent(owns = [Lead], to = [worker])]
    async fn lead(_input: String, _cx: lead::Context<'_>) -> Result<lead::Next, Reject> {
        todo!()
    }

    #[agent(owns = [Act], to = [END])]
    async fn worker(_input: Task, _cx: worker::Context<'_>) -> Result<worker::Next, Reject> {
        todo!()
    }

    #[handoff]
    pub struct Task(Operation);
}

fn main() {}
