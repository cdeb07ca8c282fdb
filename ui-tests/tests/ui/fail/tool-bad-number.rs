//! A tool's retries and back-off that are not whole numbers in range.

use workflow_core::prelude::*;

#[workflow(entry = deployer, output = String)]
mod wf {
    use super::*;

    #[tool(needs = Deploy, effect = write, retries = 5000000000, backoff_ms = 99999999999999999999)]
    async fn deploy(_input: String, _deps: &()) -> Result<String, ToolError> {
        todo!()
    }

    #[agent(owns = [Deploy], tools = [deploy], to = [END])]
    async fn deployer(
        _input: String,
        _cx: deployer::Context<'_>,
    ) -> Result<deployer::Next, Reject> {
        todo!()
    }
}

fn main() {}
