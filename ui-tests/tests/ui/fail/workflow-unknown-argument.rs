//! A misspelled argument of `#[workflow(..)]`.

use workflow_core::prelude::*;

#[workflow(entry = writer, ouptut = String)]
mod wf {
    use super::*;

    #[agent(to = [END])]
    async fn writer(_input: String, _cx: writer::Context<'_>) -> Result<writer::Next, Reject> {
        todo!()
    }
}

fn main() {}
