//! An agent named `end` would collide with the `End` variant of `END`.

use workflow_core::prelude::*;

#[workflow(entry = end, output = String)]
mod wf {
    use super::*;

    #[agent(to = [END])]
    async fn end(_input: String, _cx: end::Context<'_>) -> Result<end::Next, Reject> {
        todo!()
    }
}

fn main() {}
