//! A handoff is a struct with named fields: contract parts are marked fields.

use workflow_core::prelude::*;

#[workflow(entry = lead, output = String)]
mod wf {
    use super::*;

    #[agent(owns = [Act], to = [END])]
    async fn lead(_input: String, _cx: lead::Context<'_>) -> Result<lead::Next, Reject> {
        todo!()
    }

    #[handoff]
    pub struct Task(Operation, Scope<authority::Act>, Vec<Evidence>);
}

fn main() {}
