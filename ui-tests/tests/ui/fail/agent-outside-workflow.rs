//! `#[agent]`, `#[tool]`, `#[invariants]` and `#[post]` on items that are not
//! inside a `#[workflow]` module: each is reported.

use workflow_core::prelude::*;

#[agent(to = [END])]
async fn writer(topic: String) -> String {
    topic
}

#[tool(effect = read)]
async fn lookup(word: String, _deps: &()) -> Result<String, ToolError> {
    Ok(word)
}

#[invariants]
pub struct Root {
    pub tenant: String,
}

#[post(out.is_empty(), "nothing left")]
fn finish(out: &str) -> bool {
    out.is_empty()
}

fn main() {}
