//! A quorum larger than the branches its fan-out starts, a quorum of 0, and
//! a quorum on an agent that joins nothing.

use workflow_core::prelude::*;

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Done(pub bool);

#[workflow(entry = lead, output = Done)]
mod wf {
    use super::*;

    #[handoff]
    pub struct AskA {
        #[contract]
        pub contract: Contract<authority::A>,
    }

    #[handoff]
    pub struct AskB {
        #[contract]
        pub contract: Contract<authority::B>,
    }

    #[handoff]
    pub struct AskC {
        #[contract]
        pub contract: Contract<authority::C>,
    }

    #[handoff]
    pub struct Job {
        #[contract]
        pub contract: Contract<authority::Work>,
    }

    #[handoff]
    pub struct Again {
        #[contract]
        pub contract: Contract<authority::Second>,
    }

    #[agent(owns = [Lead], to = [parallel(a, b, c)])]
    async fn lead(_input: String, _cx: lead::Context<'_>) -> Result<lead::Next, Reject> {
        todo!()
    }

    #[agent(owns = [A], to = [judge])]
    async fn a(_ask: AskA, _cx: a::Context<'_>) -> Result<a::Next, Reject> {
        todo!()
    }

    #[agent(owns = [B], to = [judge])]
    async fn b(_ask: AskB, _cx: b::Context<'_>) -> Result<b::Next, Reject> {
        todo!()
    }

    #[agent(owns = [C], to = [judge])]
    async fn c(_ask: AskC, _cx: c::Context<'_>) -> Result<c::Next, Reject> {
        todo!()
    }

    #[agent(owns = [Judge], join = [a: Done, b: Done, c: Done], quorum = 4, to = [second])]
    async fn judge(_views: judge::Joined, _cx: judge::Context<'_>) -> Result<judge::Next, Reject> {
        todo!()
    }

    #[agent(owns = [Second], quorum = 1, to = [map(worker, max = 4)])]
    async fn second(_input: Again, _cx: second::Context<'_>) -> Result<second::Next, Reject> {
        todo!()
    }

    #[agent(owns = [Work], to = [gather])]
    async fn worker(_job: Job, _cx: worker::Context<'_>) -> Result<worker::Next, Reject> {
        todo!()
    }

    #[agent(owns = [Gather], join = [worker: [Done]], quorum = 0, to = [END])]
    async fn gather(_all: gather::Joined, _cx: gather::Context<'_>) -> Result<gather::Next, Reject> {
        todo!()
    }
}

fn main() {}
