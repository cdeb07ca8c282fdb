//! `apply_plan` needs `Apply`, owned by `terraform`; granting it to `network`
//! would let two agents exercise one authority.

use workflow_core::prelude::*;

#[workflow(entry = network, output = String)]
mod wf {
    use super::*;

    #[tool(needs = Apply, effect = read)]
    async fn apply_plan(_input: String, _deps: &()) -> Result<String, ToolError> {
        todo!()
    }

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

    #[agent(owns = [LookupVpc], tools = [apply_plan], to = [terraform])]
    async fn network(_input: String, _cx: network::Context<'_>) -> Result<network::Next, Reject> {
        todo!()
    }

    #[agent(owns = [Apply], tools = [apply_plan], to = [END])]
    async fn terraform(
        _input: Plan,
        _cx: terraform::Context<'_>,
    ) -> Result<terraform::Next, Reject> {
        todo!()
    }
}

fn main() {}
