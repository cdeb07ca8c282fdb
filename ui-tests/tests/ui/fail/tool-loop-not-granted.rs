//! `network` offers its model `apply_plan`, which is not in its `tools = [...]`.

use serde::{Deserialize, Serialize};
use workflow_core::prelude::*;

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Route {
    pub vpc: String,
}

#[workflow(entry = network, output = Route)]
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
    async fn network(goal: String, cx: network::Context<'_>) -> Result<network::Next, Reject> {
        let route: Route = cx
            .tool_loop(goal, (tools::describe_vpcs, tools::apply_plan))
            .await?;
        Ok(network::Next::End(route))
    }
}

fn main() {}
