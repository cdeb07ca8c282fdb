//! `network` is granted no tool and calls one: the error names the
//! tool.

use workflow_core::prelude::*;

#[workflow(entry = network, output = String)]
mod wf {
    use super::*;

    #[tool(effect = read)]
    async fn describe_vpcs(_input: String, _deps: &()) -> Result<String, ToolError> {
        Ok(String::new())
    }

    #[tool(effect = read)]
    async fn apply_plan(_input: String, _deps: &()) -> Result<String, ToolError> {
        Ok(String::new())
    }

    #[agent(to = [END])]
    async fn network(vpc: String, cx: network::Context<'_>) -> Result<network::Next, Reject> {
        let applied = cx.call(tools::apply_plan, vpc).await?;
        Ok(network::Next::End(applied))
    }
}

fn main() {}
