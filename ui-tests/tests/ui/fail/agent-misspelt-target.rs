//! A handoff to a target the agent declares, spelt wrong where the `Next`
//! value is built: rustc's error on the variant, which suggests the right
//! one.

use workflow_core::prelude::*;

#[workflow(entry = intake, output = String)]
mod wf {
    use super::*;

    #[handoff]
    pub struct Ticket {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Classify>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
    }

    #[agent(to = [classifier])]
    async fn intake(input: String, cx: intake::Context<'_>) -> Result<intake::Next, Reject> {
        Ok(intake::Next::Clasifier(Ticket {
            op: Operation::new("classify", input),
            scope: cx.lease(authority::Classify).as_long_as_mine(),
            evidence: vec![],
            open: vec![],
            stop: StopWhen::at_hop(cx.hop() + 8),
        }))
    }

    #[agent(owns = [Classify], to = [END])]
    async fn classifier(t: Ticket, _cx: classifier::Context<'_>) -> Result<classifier::Next, Reject> {
        Ok(classifier::Next::End(t.op.detail.into_owned()))
    }
}

fn main() {}
