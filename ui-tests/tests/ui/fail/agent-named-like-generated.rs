//! An agent named like an item the workflow generates (`State`).

#![allow(non_snake_case)]

use workflow_core::prelude::*;

#[workflow(entry = State, output = String)]
mod wf {
    use super::*;

    #[agent(to = [END])]
    async fn State(text: String, _cx: State::Context<'_>) -> Result<State::Next, Reject> {
        Ok(State::Next::End(text))
    }
}

fn main() {}
