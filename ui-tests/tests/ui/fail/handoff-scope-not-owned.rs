//! The planner hands `network` a task scoped to `authority::Apply`, which
//! `network` does not own (`terraform` does): the handoff would delegate an
//! authority its receiver cannot exercise.

use workflow_core::prelude::*;

#[workflow(entry = planner, output = String)]
mod wf {
    use super::*;

    #[handoff]
    pub struct NetworkTask {
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

    #[handoff]
    pub struct TerraformPlan {
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

    #[agent(owns = [Plan], to = [network])]
    async fn planner(_input: String, _cx: planner::Context<'_>) -> Result<planner::Next, Reject> {
        todo!()
    }

    #[agent(owns = [LookupVpc], to = [terraform])]
    async fn network(
        _input: NetworkTask,
        _cx: network::Context<'_>,
    ) -> Result<network::Next, Reject> {
        todo!()
    }

    #[agent(owns = [Apply], to = [END])]
    async fn terraform(
        _input: TerraformPlan,
        _cx: terraform::Context<'_>,
    ) -> Result<terraform::Next, Reject> {
        todo!()
    }
}

fn main() {}
