//! Two agents own the authority `Apply`: which one decides? Both are blamed.

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

    #[agent(owns = [Apply], to = [terraform])]
    async fn planner(_input: String, _cx: planner::Context<'_>) -> Result<planner::Next, Reject> {
        todo!()
    }

    #[agent(owns = [Apply], to = [END])]
    async fn terraform(
        _input: Plan,
        _cx: terraform::Context<'_>,
    ) -> Result<terraform::Next, Reject> {
        todo!()
    }
}

fn main() {}
