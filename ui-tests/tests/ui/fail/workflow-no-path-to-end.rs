//! `network` hands off only to `terraform`, which declares no receivers: no
//! run through them can end. The dead end, `terraform`, is reported.

use workflow_core::prelude::*;

#[workflow(entry = planner, output = String)]
mod wf {
    use super::*;

    #[handoff]
    pub struct NetworkTask {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::LookupVpc>,
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

    #[agent(owns = [Plan], to = [network, END])]
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

    #[agent(owns = [Apply])]
    async fn terraform(
        _input: TerraformPlan,
        _cx: terraform::Context<'_>,
    ) -> Result<terraform::Next, Reject> {
        todo!()
    }
}

fn main() {}
