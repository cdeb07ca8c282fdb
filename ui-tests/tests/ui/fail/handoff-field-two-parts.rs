//! One field marked as two contract parts: with a type that could be both
//! (`Both` implements `EvidenceList` and `OpenQuestions`), with types that
//! are neither, and with one mark written twice. The error is on the second
//! mark and speaks about the marking, not about the type.

use workflow_core::prelude::*;
use workflow_core::{EvidenceList, OpenQuestions};

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Both(pub Vec<String>);

impl EvidenceList for Both {
    // (Written short: the lines below keep their numbers.)
    fn resolves(&self, question: &str) -> bool { self.0.iter().any(|q| q == question) }
    fn items(&self) -> &[workflow_core::Evidence] { &[] }
}

impl OpenQuestions for Both {
    fn questions(&self) -> Vec<&str> {
        self.0.iter().map(String::as_str).collect()
    }
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[workflow(entry = lead, output = String)]
mod wf {
    use super::*;

    #[agent(owns = [Act], to = [END])]
    async fn lead(_input: String, _cx: lead::Context<'_>) -> Result<lead::Next, Reject> {
        todo!()
    }

    /// A type that implements both parts' traits.
    #[handoff]
    pub struct Merged {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Act>,
        #[evidence]
        #[uncertainty]
        pub notes: super::Both,
        #[stop]
        pub stop: StopWhen,
    }

    /// A type that implements neither: the error is about the marking,
    /// not about the type.
    #[handoff]
    pub struct Neither {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Act>,
        #[evidence]
        #[uncertainty]
        pub notes: String,
        #[stop]
        pub stop: StopWhen,
    }

    /// Types that fit the first mark only, twice in one struct.
    #[handoff]
    pub struct FirstFits {
        #[operation]
        #[authority]
        pub op: Operation,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        #[stop]
        pub open: Vec<Uncertainty>,
    }

    /// One mark written twice.
    #[handoff]
    pub struct Repeated {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Act>,
        #[evidence]
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
    }
}

fn main() {}
