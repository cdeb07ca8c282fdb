//! Typed, checked multi-agent workflows.
//!
//! Declare agents, handoff payloads, conditions and loop bounds with the
//! attribute macros (`#[workflow]`, `#[agent]`, `#[handoff]`, ...). The macros
//! reject bad handoffs, role overlap and unbounded loops at compile time and
//! generate a statically typed executor that checks a receipt before every
//! agent turn and records every transfer.
//!
//! ```
//! use workflow_core::prelude::*;
//!
//! #[workflow(entry = writer, output = Draft)]
//! pub mod review {
//!     use super::*;
//!
//!     #[derive(Debug, Clone, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
//!     pub struct Draft {
//!         pub text: String,
//!     }
//!
//!     #[agent(to = [END])]
//!     async fn writer(topic: String, _cx: writer::Context<'_>) -> Result<writer::Next, Reject> {
//!         Ok(writer::Next::End(Draft { text: format!("on {topic}") }))
//!     }
//! }
//!
//! fn main() {
//!     let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
//!     let done = rt
//!         .block_on(review::Workflow::new((), ()).run("seams".to_owned()))
//!         .unwrap();
//!     assert_eq!(done.output.text, "on seams");
//!     assert_eq!(review::MAX_HOPS, 1);
//! }
//! ```
//!
//! The book (`book/`) has the guide, the DSL reference and the index of
//! every compile error.

#![warn(missing_docs)]

pub mod budget;
mod canonical;
pub mod contract;
pub mod error;
pub mod escalation;
pub mod executor;
pub mod graph;
pub mod invariant;
pub mod ledger;
pub mod manifest;
#[cfg(feature = "metrics")]
pub mod metrics;
pub mod model;
pub mod record;
pub mod replay;
pub mod runtime;
pub mod schema;
pub mod session;
mod telemetry;
pub mod tool;
pub mod validate;

pub use budget::{Budget, BudgetExhausted, Usage};
pub use contract::{
    Authority, AuthorityScope, ContractView, Evidence, EvidenceList, Expiry, Handoff, Moment,
    OpenQuestions, Operation, Owns, Payload, Scope, StopCondition, StopConditions, StopWhen,
    Uncertainty,
};
pub use error::{Aborted, Completed, Reject, RunError, ToolError, ToolErrorKind};
pub use escalation::{Decision, Suspension};
pub use executor::{
    Agent, Approval, Context, Granted, RecordedPayload, Returned, Route, Tool, ToolCall,
    Transition, Workflow,
};
pub use graph::{AgentInfo, Condition, EdgeInfo, Graph, Node, OnReject, ToolInfo};
pub use invariant::{Gate, Invariants, TransferView};
pub use manifest::Manifest;
pub use model::{Model, ModelError, ModelErrorKind, Prompt};
pub use record::{
    AgentSummary, Endpoint, Escalation, Receipt, RecordError, RejectReason, RunSummary, Transcript,
    TransferRecord, TurnRecord,
};
pub use replay::{Difference, Divergence, ReplayError, ReplayReport};
pub use runtime::{Progress, Runtime};
pub use schema::{Drift, Publication, SchemaSet};
pub use session::{Executor, Session, Step};
pub use tool::{Effect, FailFast, Fallback, Then, Unusable};

#[cfg(feature = "macros")]
pub use workflow_macros::{agent, handoff, invariants, post, pre, tool, workflow};

/// Everything a workflow module needs: `use workflow_core::prelude::*;`.
pub mod prelude {
    pub use crate::budget::{Budget, Usage};
    pub use crate::contract::{
        Evidence, Expiry, Handoff, Operation, Scope, StopCondition, StopWhen, Uncertainty,
    };
    pub use crate::error::{Aborted, Completed, Reject, RunError, ToolError, ToolErrorKind};
    pub use crate::escalation::{Decision, Suspension};
    pub use crate::invariant::TransferView;
    pub use crate::model::{Model, ModelError, Prompt};
    pub use crate::record::{Receipt, RejectReason};
    pub use crate::session::{Executor, Step};
    pub use crate::tool::{FailFast, Unusable};
    #[cfg(feature = "macros")]
    pub use workflow_macros::{agent, handoff, invariants, post, pre, tool, workflow};
}

/// Not public API: what generated code names. May change in any release.
#[doc(hidden)]
pub mod __private {
    pub use crate::session::edge_index;
    pub use schemars;
    pub use serde;
    pub use serde_json;
    pub use std::borrow::Cow;
    pub use std::boxed::Box;
    pub use std::format;
    pub use std::future::Future;
    pub use std::option::Option;
    pub use std::result::Result;
    pub use std::string::String;
    pub use std::time::Duration;
    pub use std::vec::Vec;
    pub use tokio::time::timeout;

    /// The JSON Schema (draft 2020-12) of `T`, for the static graph.
    pub fn schema_doc<T: schemars::JsonSchema>() -> schemars::Schema {
        schemars::generate::SchemaSettings::draft2020_12()
            .into_generator()
            .into_root_schema_for::<T>()
    }

    /// Writes the canonical bytes of `payload` (for `Workflow::encode_state`).
    pub fn encode<P: serde::Serialize>(
        out: &mut Vec<u8>,
        payload: &P,
    ) -> Result<crate::ledger::PayloadFormat, String> {
        crate::canonical::encode(out, payload)
    }

    /// The root invariants as JSON (for `Invariants::to_json`).
    pub fn to_json<T: serde::Serialize>(value: &T) -> Result<serde_json::Value, String> {
        serde_json::to_value(value).map_err(|e| e.to_string())
    }

    /// The authority of a handoff whose `#[authority]` part is missing (a
    /// compile error already): every agent "owns" it, so nothing follows
    /// from that error.
    #[derive(Debug, Clone, Copy, Default)]
    pub struct UnknownAuthority;
    impl crate::Authority for UnknownAuthority {
        const NAME: &'static str = "<missing #[authority] part>";
    }
    impl<A> crate::Owns<UnknownAuthority> for A {}

    /// The stop conditions of a handoff whose `#[stop]` part is missing (a
    /// compile error already).
    pub static NO_STOP: crate::StopWhen = crate::StopWhen { any: Vec::new() };
    /// The open questions of a handoff whose `#[uncertainty]` part is
    /// missing (a compile error already).
    pub static NO_OPEN: Vec<crate::Uncertainty> = Vec::new();
    /// The evidence of a handoff whose `#[evidence]` part is missing (a
    /// compile error already).
    pub static NO_EVIDENCE: Vec<crate::Evidence> = Vec::new();
    /// Autoref specialisation: the contract of an entry agent's input if it
    /// is a handoff, `None` otherwise (`(&ContractProbe(x)).contract_view()`
    /// with both traits in scope).
    pub struct ContractProbe<'a, T>(pub &'a T);

    /// The contract of a handoff input.
    pub trait ContractOfHandoff<'a> {
        /// `Some` contract.
        fn contract_view(&self) -> Option<crate::ContractView<'a>>;
    }
    impl<'a, T: crate::Handoff> ContractOfHandoff<'a> for ContractProbe<'a, T> {
        fn contract_view(&self) -> Option<crate::ContractView<'a>> {
            Some(self.0.contract())
        }
    }

    /// No contract for any other input.
    pub trait ContractOfAnything<'a> {
        /// `None`.
        fn contract_view(&self) -> Option<crate::ContractView<'a>>;
    }
    impl<'a, T> ContractOfAnything<'a> for &ContractProbe<'a, T> {
        fn contract_view(&self) -> Option<crate::ContractView<'a>> {
            None
        }
    }

    /// Reads a contract part: used as its `deserialize_with`, so that a
    /// missing part is an error whatever its type (serde would default an
    /// `Option`, even one behind a type alias).
    pub fn required<'de, D, T>(d: D) -> Result<T, D::Error>
    where
        D: serde::Deserializer<'de>,
        T: serde::Deserialize<'de>,
    {
        T::deserialize(d)
    }

    /// Asserts at compile time that agent `A` owns authority `Au`.
    pub const fn assert_owns<A: crate::Owns<Au>, Au: crate::Authority>() {}
}

/// The book's code blocks, compiled and run as doctests.
#[cfg(doctest)]
pub mod book {
    #[doc = include_str!("../../book/src/quick-start.md")]
    pub struct QuickStart;
    #[doc = include_str!("../../book/src/dsl.md")]
    pub struct Dsl;
    #[doc = include_str!("../../book/src/runtime.md")]
    pub struct Runtime;
    #[doc = include_str!("../../book/src/schemas.md")]
    pub struct Schemas;
    #[doc = include_str!("../../book/src/ledger.md")]
    pub struct Ledger;
    #[doc = include_str!("../../book/src/enforcement.md")]
    pub struct Enforcement;
    #[doc = include_str!("../../book/src/models.md")]
    pub struct Models;
}
