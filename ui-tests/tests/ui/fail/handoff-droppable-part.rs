//! Serde options that let a contract part be absent or dropped on the wire;
//! every one is reported.

use workflow_core::prelude::*;

#[workflow(entry = lead, output = String)]
mod wf {
    use super::*;

    #[agent(owns = [Act], to = [END])]
    async fn lead(_input: String, _cx: lead::Context<'_>) -> Result<lead::Next, Reject> {
        todo!()
    }

    #[handoff]
    pub struct Defaulted {
        #[operation]
        #[serde(skip_serializing)]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Act>,
        #[evidence]
        #[serde(default)]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        #[serde(skip)]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
    }

    #[handoff]
    pub struct Skipped {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Act>,
        #[evidence]
        #[serde(skip_deserializing)]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
    }
}

fn main() {}
