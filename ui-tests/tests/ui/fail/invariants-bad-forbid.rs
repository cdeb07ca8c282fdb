//! Forbidden fields must be field names or dotted paths.

use workflow_core::prelude::*;

#[workflow(entry = intake, output = String)]
mod wf {
    use super::*;

    #[invariants(forbid = ["ssn", "customer..email"])]
    pub struct Root {
        pub tenant: String,
    }

    #[agent(to = [END])]
    async fn intake(input: String, _cx: intake::Context<'_>) -> Result<intake::Next, Reject> {
        Ok(intake::Next::End(input))
    }
}

fn main() {}
