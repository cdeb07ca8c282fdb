//! A misspelled argument of `#[agent(..)]` (`tool` for `tools`).

use workflow_core::prelude::*;

#[workflow(entry = network, output = String)]
mod wf {
    use super::*;

    #[tool(effect = read)]
    async fn describe_vpcs(_input: String, _deps: &()) -> Result<String, ToolError> {
        todo!()
    }

    #[agent(tool = [describe_vpcs], to = [END])]
    async fn network(_input: String, _cx: network::Context<'_>) -> Result<network::Next, Reject> {
        todo!()
    }
}

fn main() {}
