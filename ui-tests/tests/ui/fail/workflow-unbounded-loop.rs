//! planner -> coder -> tester -> planner: a cycle with no bounded edge.

use workflow_core::prelude::*;

#[workflow(entry = planner, output = String)]
mod wf {
    use super::*;

    #[handoff]
    pub struct Design {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Code>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
    }

    #[handoff]
    pub struct Change {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Test>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
    }

    #[handoff]
    pub struct Failure {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Plan>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
    }

    #[agent(owns = [Plan], to = [coder])]
    async fn planner(_input: Failure, _cx: planner::Context<'_>) -> Result<planner::Next, Reject> {
        todo!()
    }

    #[agent(owns = [Code], to = [tester])]
    async fn coder(_input: Design, _cx: coder::Context<'_>) -> Result<coder::Next, Reject> {
        todo!()
    }

    #[agent(owns = [Test], to = [planner, END])]
    async fn tester(_input: Change, _cx: tester::Context<'_>) -> Result<tester::Next, Reject> {
        todo!()
    }
}

fn main() {}
