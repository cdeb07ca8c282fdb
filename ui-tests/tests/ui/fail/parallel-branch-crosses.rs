//! A branch that hands on into another branch: branches run at the same
//! time and meet only at their join.

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

    #[agent(owns = [Lead], to = [parallel(security, style)])]
    async fn lead(_input: String, _cx: lead::Context<'_>) -> Result<lead::Next, Reject> {
        todo!()
    }

    #[agent(owns = [Security], to = [style, judge])]
    async fn security(_input: SecurityAsk, _cx: security::Context<'_>) -> Result<security::Next, Reject> {
        todo!()
    }

    #[agent(owns = [Style], to = [judge])]
    async fn style(_input: StyleAsk, _cx: style::Context<'_>) -> Result<style::Next, Reject> {
        todo!()
    }

    #[agent(join = [security: Review, style: Review], to = [END])]
    async fn judge(_views: judge::Joined, _cx: judge::Context<'_>) -> Result<judge::Next, Reject> {
        todo!()
    }
}

fn main() {}
