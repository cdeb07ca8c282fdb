//! Branches of more than one turn where they are not built: under a
//! quorum join, and as the items of a map.

use workflow_core::prelude::*;

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Review(pub bool);

#[workflow(entry = lead, output = Review)]
mod wf {
    use super::*;

    #[handoff]
    pub struct SecurityAsk {
        #[contract]
        pub contract: Contract<authority::Security>,
    }

    #[handoff]
    pub struct StyleAsk {
        #[contract]
        pub contract: Contract<authority::Style>,
    }

    #[handoff]
    pub struct FixAsk {
        #[contract]
        pub contract: Contract<authority::Fix>,
    }

    #[handoff]
    pub struct DispatchAsk {
        #[contract]
        pub contract: Contract<authority::Dispatch>,
    }

    #[handoff]
    pub struct Job {
        #[contract]
        pub contract: Contract<authority::Work>,
    }

    #[handoff]
    pub struct CheckAsk {
        #[contract]
        pub contract: Contract<authority::Check>,
    }

    #[agent(owns = [Lead], to = [parallel(security, style)])]
    async fn lead(_input: String, _cx: lead::Context<'_>) -> Result<lead::Next, Reject> {
        todo!()
    }

    #[agent(owns = [Security], to = [fixer, judge])]
    async fn security(_input: SecurityAsk, _cx: security::Context<'_>) -> Result<security::Next, Reject> {
        todo!()
    }

    #[agent(owns = [Fix], to = [judge])]
    async fn fixer(_input: FixAsk, _cx: fixer::Context<'_>) -> Result<fixer::Next, Reject> {
        todo!()
    }

    #[agent(owns = [Style], to = [judge])]
    async fn style(_input: StyleAsk, _cx: style::Context<'_>) -> Result<style::Next, Reject> {
        todo!()
    }

    #[agent(owns = [Work], to = [checker])]
    async fn worker(_input: Job, _cx: worker::Context<'_>) -> Result<worker::Next, Reject> {
        todo!()
    }

    #[agent(owns = [Check], to = [gather])]
    async fn checker(_input: CheckAsk, _cx: checker::Context<'_>) -> Result<checker::Next, Reject> {
        todo!()
    }

    #[agent(join = [security: Review, style: Review], quorum = 1, to = [dispatch])]
    async fn judge(_views: judge::Joined, _cx: judge::Context<'_>) -> Result<judge::Next, Reject> {
        todo!()
    }

    #[agent(owns = [Dispatch], to = [map(worker, max = 4)])]
    async fn dispatch(_input: DispatchAsk, _cx: dispatch::Context<'_>) -> Result<dispatch::Next, Reject> {
        todo!()
    }

    #[agent(join = [worker: [Review]], to = [END])]
    async fn gather(_all: gather::Joined, _cx: gather::Context<'_>) -> Result<gather::Next, Reject> {
        todo!()
    }
}

fn main() {}
