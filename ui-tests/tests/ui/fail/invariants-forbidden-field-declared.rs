//! A type that travels in the workflow declares a field the invariants
//! forbid: a handoff, the input, a tool's output, under a serde rename,
//! and nested in one of the module's structs. Each is an error at the field;
//! a skipped field, or one serde writes under another name, is not.

use workflow_core::prelude::*;

#[workflow(entry = intake, output = String)]
mod wf {
    use super::*;

    #[invariants(forbid = ["ssn", "card.number"])]
    pub struct Root {
        pub tenant: String,
    }

    /// The workflow input.
    #[derive(Debug, Clone, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub struct Ticket {
        pub ssn: Option<String>,
        pub card: Card,
        /// Never written, so never carried: allowed.
        #[serde(skip)]
        pub ssn_checked: bool,
        /// Written as `ssnHash`: allowed.
        pub ssn_hash: String,
    }

    /// Nested: `card.number` is the forbidden path.
    #[derive(Debug, Clone, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    pub struct Card {
        pub number: String,
        pub kind: String,
    }

    #[handoff]
    #[serde(rename_all = "camelCase")]
    pub struct Task {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Work>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
        #[serde(rename = "ssn")]
        pub social: String,
    }

    /// A tool's output.
    #[derive(Debug, Clone, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    pub struct Lookup {
        pub ssn: String,
    }

    impl FailFast for Lookup {}

    #[tool(effect = read)]
    async fn lookup(name: String, _deps: &()) -> Result<Lookup, ToolError> {
        Ok(Lookup { ssn: name })
    }

    #[agent(tools = [lookup], to = [worker])]
    async fn intake(input: Ticket, _cx: intake::Context<'_>) -> Result<intake::Next, Reject> {
        let _ = input;
        Err(Reject::because("stub"))
    }

    #[agent(owns = [Work], to = [END])]
    async fn worker(task: Task, _cx: worker::Context<'_>) -> Result<worker::Next, Reject> {
        Ok(worker::Next::End(task.social))
    }
}

fn main() {}
