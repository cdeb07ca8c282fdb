//! `network` calls `apply_plan`, which is not in its `tools = [...]`.

use workflow_core::prelude::*;

#[workflow(entry = network, output = String)]
mod wf {
    use super::*;

    #[tool(effect = read)]
    async fn describe_vpcs(_input: String, _deps: &()) -> Result<String, ToolError> {
        todo!()
    }

    #[tool(effect = read)]
    async fn describe_subnets(_input: String, _deps: &()) -> Result<String, ToolError> {
        todo!()
    }

    #[tool(effect = read)]
    async fn apply_plan(_input: String, _deps: &()) -> Result<String, ToolError> {
        todo!()
    }

    #[agent(tools = [describe_vpcs, describe_subnets], to = [END])]
    async fn network(vpc: String, cx: network::Context<'_>) -> Result<network::Next, Reject> {
        let applied = cx.call(tools::apply_plan, vpc).await?;
        Ok(network::Next::End(applied))
    }
}

fn main() {}
