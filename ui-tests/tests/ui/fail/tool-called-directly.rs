//! An agent calls a tool's function directly, around `cx.call` (and so
//! around the grant, the scope check, fail-fast, the journal and the
//! record): by its written name, by its hidden name, and through the tool's
//! unit type; and through the `Tool` trait's method without the permit only
//! `cx.call` can make (a forged permit: `tool-permit-forged.rs`). The
//! function is sealed: nothing outside the macro can name it.

use workflow_core::prelude::*;
use workflow_core::Tool;

#[workflow(entry = network, output = String)]
mod wf {
    use super::*;

    #[tool(effect = read)]
    async fn describe_vpcs(_input: String, _deps: &()) -> Result<String, ToolError> {
        todo!()
    }

    #[agent(to = [END])]
    async fn network(vpc: String, _cx: network::Context<'_>) -> Result<network::Next, Reject> {
        let written = describe_vpcs(vpc.clone(), &()).await?;
        let hidden = __tool_describe_vpcs(vpc.clone(), &()).await?;
        let through_type = tools::describe_vpcs(vpc.clone(), &()).await?;
        let through_trait = tools::describe_vpcs.call(vpc, &()).await?;
        Ok(network::Next::End(
            written + &hidden + &through_type + &through_trait,
        ))
    }
}

fn main() {}
