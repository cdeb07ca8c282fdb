//! A map's join that declares one outcome (`worker: Done`) instead of a
//! list (`worker: [Done]`), and a `parallel(..)`'s join that declares a list
//! for one branch.

use workflow_core::prelude::*;

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Done(pub bool);

#[workflow(entry = lead, output = Done)]
mod wf {
    use super::*;

    #[handoff]
    pub struct Job {
        #[contract]
        pub contract: Contract<authority::Work>,
    }

    #[handoff]
    pub struct Next2 {
        #[contract]
        pub contract: Contract<authority::Second>,
    }

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

    #[agent(owns = [Lead], to = [map(worker, max = 8)])]
    async fn lead(_input: String, _cx: lead::Context<'_>) -> Result<lead::Next, Reject> {
        todo!()
    }

    #[agent(owns = [Work], to = [gather])]
    async fn worker(_job: Job, _cx: worker::Context<'_>) -> Result<worker::Next, Reject> {
        todo!()
    }

    #[agent(owns = [Gather], join = [worker: Done], to = [second])]
    async fn gather(_all: gather::Joined, _cx: gather::Context<'_>) -> Result<gather::Next, Reject> {
        todo!()
    }

    #[agent(owns = [Second], to = [parallel(a, b)])]
    async fn second(_input: Next2, _cx: second::Context<'_>) -> Result<second::Next, Reject> {
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

    #[agent(owns = [Judge], join = [a: [Done], b: Done], to = [END])]
    async fn judge(_views: judge::Joined, _cx: judge::Context<'_>) -> Result<judge::Next, Reject> {
        todo!()
    }
}

fn main() {}
