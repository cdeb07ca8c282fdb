//! `reviewer` receives handoffs from `writer`, but its input is a plain
//! `String`: no operation, authority, evidence, uncertainty or stop conditions.

use workflow_core::prelude::*;

#[workflow(entry = writer, output = String)]
mod wf {
    use super::*;

    #[agent(to = [reviewer])]
    async fn writer(_input: String, _cx: writer::Context<'_>) -> Result<writer::Next, Reject> {
        todo!()
    }

    #[agent(owns = [Approve], to = [END])]
    async fn reviewer(
        _input: String,
        _cx: reviewer::Context<'_>,
    ) -> Result<reviewer::Next, Reject> {
        todo!()
    }
}

fn main() {}
