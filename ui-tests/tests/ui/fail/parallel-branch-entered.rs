//! An agent inside a branch (the fixer of `security`'s branch) that an
//! agent outside the branch also hands off to.

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
    pub struct HelpAsk {
        #[contract]
        pub contract: Contract<authority::Help>,
    }

    #[agent(owns = [Lead], to = [parallel(security, style), helper])]
    async fn lead(_input: String, _cx: lead::Context<'_>) -> Result<lead::Next, Reject> {
        todo!()
    }

    #[agent(owns = [Help], to = [fixer])]
    async fn helper(_input: HelpAsk, _cx: helper::Context<'_>) -> Result<helper::Next, Reject> {
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

    #[agent(join = [security: Review, style: Review], to = [END])]
    async fn judge(_views: judge::Joined, _cx: judge::Context<'_>) -> Result<judge::Next, Reject> {
        todo!()
    }
}

fn main() {}
