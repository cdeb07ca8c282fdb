//! Two `#[invariants]` types: a run pins one set of invariants.

use workflow_core::prelude::*;

#[workflow(entry = writer, output = String)]
mod wf {
    use super::*;

    #[invariants]
    pub struct Root {
        pub tenant: String,
    }

    #[invariants]
    pub struct Limits {
        pub max_rows: u32,
    }

    #[agent(to = [END])]
    async fn writer(_input: String, _cx: writer::Context<'_>) -> Result<writer::Next, Reject> {
        todo!()
    }
}

fn main() {}
