//! Types named through `super::` paths from inside the workflow module, a
//! private workflow module, and two workflows in one crate.

#![deny(warnings)]

use serde::{Deserialize, Serialize};
use workflow_core::prelude::*;

#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Report {
    pub words: usize,
}

#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Text(pub String);

/// Every report is usable.
impl FailFast for Report {}

pub struct Counter;

#[workflow(entry = count, output = super::Report, deps = super::Counter)]
mod words {
    #[allow(unused_imports)]
    use super::*;

    #[tool(effect = read)]
    async fn split(text: super::Text, _counter: &super::Counter) -> Result<super::Report, ToolError> {
        Ok(super::Report { words: text.0.split_whitespace().count() })
    }

    #[agent(tools = [split], to = [END])]
    async fn count(text: super::Text, cx: count::Context<'_>) -> Result<count::Next, Reject> {
        let report = cx.call(tools::split, text).await?;
        Ok(count::Next::End(report))
    }
}

#[workflow(entry = echo, output = String)]
mod echo_flow {
    use super::*;

    #[agent(to = [END])]
    async fn echo(text: String, _cx: echo::Context<'_>) -> Result<echo::Next, Reject> {
        Ok(echo::Next::End(text))
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let report = rt
        .block_on(words::Workflow::new((), Counter).run(Text("a b c".into())))
        .unwrap()
        .output;
    assert_eq!(report.words, 3);
    let echoed = rt.block_on(echo_flow::Workflow::new((), ()).run("hi".into())).unwrap().output;
    assert_eq!(echoed, "hi");
}
