//! The workflow's input is a handoff scoped to `authority::Apply`, but the
//! entry `planner` does not own it (`terraform` does): the edge from the
//! caller into the entry would delegate an authority its receiver cannot
//! exercise, and every run would be rejected at the first receipt.
//! The same holds for a handoff declared outside the workflow's module
//! (`other`'s input is `wf::Plan`, whose authority none of its agents own).

use workflow_core::prelude::*;

#[workflow(entry = planner, output = String)]
mod wf {
    use super::*;

    #[handoff]
    pub struct Plan {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Apply>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
    }

    #[agent(owns = [Design], to = [terraform])]
    async fn planner(_input: Plan, _cx: planner::Context<'_>) -> Result<planner::Next, Reject> {
        todo!()
    }

    #[agent(owns = [Apply], to = [END])]
    async fn terraform(_input: Plan, _cx: terraform::Context<'_>) -> Result<terraform::Next, Reject> {
        todo!()
    }
}

#[workflow(entry = reviewer, output = String)]
mod other {
    use super::*;

    #[agent(owns = [Apply], to = [END])]
    async fn reviewer(_input: super::wf::Plan, _cx: reviewer::Context<'_>) -> Result<reviewer::Next, Reject> {
        todo!()
    }
}

fn main() {}
