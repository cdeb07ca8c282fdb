//! A tool output type that does not say when a value is unusable (empty,
//! partial, a failure status).

use workflow_core::prelude::*;

#[derive(Debug, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Listing {
    pub items: Vec<String>,
    pub next_page: Option<u32>,
}

#[workflow(entry = lookup, output = String)]
mod wf {
    use super::*;

    #[tool(effect = read)]
    async fn list(_input: String, _deps: &()) -> Result<Listing, ToolError> {
        todo!()
    }

    #[agent(tools = [list], to = [END])]
    async fn lookup(input: String, cx: lookup::Context<'_>) -> Result<lookup::Next, Reject> {
        let listing = cx.call(tools::list, input).await?;
        Ok(lookup::Next::End(listing.items.join(",")))
    }
}

fn main() {}
