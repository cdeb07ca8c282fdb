//! A branch that fans out again under a quorum join: the branch takes more
//! than one turn (its own fan-out's), which a quorum does not count.

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
    pub struct AAsk {
        #[contract]
        pub contract: Contract<authority::A>,
    }

    #[handoff]
    pub struct BAsk {
        #[contract]
        pub contract: Contract<authority::B>,
    }

    #[agent(owns = [Lead], to = [parallel(security, style)])]
    async fn lead(_input: String, _cx: lead::Context<'_>) -> Result<lead::Next, Reject> {
        todo!()
    }

    #[agent(owns = [Security], to = [parallel(a, b)])]
    async fn security(_input: SecurityAsk, _cx: security::Context<'_>) -> Result<security::Next, Reject> {
        todo!()
    }

    #[agent(owns = [A], to = [inner])]
    async fn a(_input: AAsk, _cx: a::Context<'_>) -> Result<a::Next, Reject> {
        todo!()
    }

    #[agent(owns = [B], to = [inner])]
    async fn b(_input: BAsk, _cx: b::Context<'_>) -> Result<b::Next, Reject> {
        todo!()
    }

    #[agent(owns = [Inner], join = [a: Review, b: Review], to = [judge])]
    async fn inner(_views: inner::Joined, _cx: inner::Context<'_>) -> Result<inner::Next, Reject> {
        todo!()
    }

    #[agent(owns = [Style], to = [judge])]
    async fn style(_input: StyleAsk, _cx: style::Context<'_>) -> Result<style::Next, Reject> {
        todo!()
    }

    #[agent(join = [security: Review, style: Review], quorum = 1, to = [END])]
    async fn judge(_views: judge::Joined, _cx: judge::Context<'_>) -> Result<judge::Next, Reject> {
        todo!()
    }
}

fn main() {}
