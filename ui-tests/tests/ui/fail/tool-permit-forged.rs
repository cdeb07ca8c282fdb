//! An agent calls a tool through the `Tool` trait's method with a permit it
//! made itself: only `cx.call` can make a `ToolCallPermit`.

use workflow_core::prelude::*;
use workflow_core::{Tool, ToolCallPermit};

#[workflow(entry = network, output = String)]
mod wf {
    use super::*;

    #[tool(effect = read)]
    async fn describe_vpcs(_input: String, _deps: &()) -> Result<String, ToolError> {
        todo!()
    }

    #[agent(to = [END])]
    async fn network(vpc: String, _cx: network::Context<'_>) -> Result<network::Next, Reject> {
        let forged = tools::describe_vpcs
            .call(vpc, &(), ToolCallPermit { _sealed: std::marker::PhantomData })
            .await?;
        Ok(network::Next::End(forged))
    }
}

fn main() {}
