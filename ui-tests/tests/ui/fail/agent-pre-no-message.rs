//! A pre-condition without a message: a rejection must say what it protects.

use workflow_core::prelude::*;

#[workflow(entry = writer, output = String)]
mod wf {
    use super::*;

    #[pre(!_input.is_empty())]
    #[agent(to = [END])]
    async fn writer(_input: String, _cx: writer::Context<'_>) -> Result<writer::Next, Reject> {
        todo!()
    }
}

fn main() {}
