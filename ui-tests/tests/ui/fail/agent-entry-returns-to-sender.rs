//! The entry agent cannot send a rejected input back: its sender is the
//! caller of `run`.

use workflow_core::prelude::*;

#[workflow(entry = intake, output = String)]
mod wf {
    use super::*;

    #[agent(owns = [Intake], to = [END], on_reject = sender(max = 2))]
    async fn intake(input: String, _cx: intake::Context<'_>) -> Result<intake::Next, Reject> {
        Ok(intake::Next::End(input))
    }
}

fn main() {}
