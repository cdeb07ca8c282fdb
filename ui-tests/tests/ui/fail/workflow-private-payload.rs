//! A payload type declared in the module without `pub`: the generated
//! `Next` and `State` enums are public and carry it.

use workflow_core::prelude::*;

#[workflow(entry = writer, output = Article)]
mod wf {
    use super::*;

    #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    struct Article {
        text: String,
    }

    #[agent(to = [END])]
    async fn writer(topic: String, _cx: writer::Context<'_>) -> Result<writer::Next, Reject> {
        Ok(writer::Next::End(Article { text: topic }))
    }
}

fn main() {}
