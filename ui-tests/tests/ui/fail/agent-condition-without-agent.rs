//! `#[pre]` on a function of the workflow that is not an agent.

use workflow_core::prelude::*;

#[workflow(entry = writer, output = String)]
mod wf {
    use super::*;

    #[agent(to = [END])]
    async fn writer(_input: String, _cx: writer::Context<'_>) -> Result<writer::Next, Reject> {
        todo!()
    }

    #[pre(text.len() < 100, "short enough")]
    fn check(text: &str) -> bool {
        !text.is_empty()
    }
}

fn main() {}
