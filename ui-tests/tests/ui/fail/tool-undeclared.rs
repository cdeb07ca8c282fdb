//! An agent granted a tool that the module does not declare (a typo).

use workflow_core::prelude::*;

#[workflow(entry = network, output = String)]
mod wf {
    use super::*;

    #[tool(effect = read)]
    async fn describe_vpcs(_input: String, _deps: &()) -> Result<String, ToolError> {
        todo!()
    }

    #[agent(tools = [describe_vpc], to = [END])]
    async fn network(_input: String, _cx: network::Context<'_>) -> Result<network::Next, Reject> {
        todo!()
    }
}

fn main() {}
