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

// The layers, bottom up: each imports only the layers declared before it
// (`tests/layers.rs` checks it), except the one import kept on purpose: the
// traits in `spec::workflow` name `run`'s `Runtime` and `Context`.

// What crosses a seam: contract parts, graph, receipts, records, traits.
mod spec;

// The canonical encoding of records.
mod encode;

// Where records are committed, chained and verified.
pub mod ledger;

// Models: the trait, requests, scripted and recorded models.
pub mod llm;

// What a workflow publishes: schemas, manifest, MCP definitions.
mod export;

// Spans and metrics.
mod observe;

// One run as it happens: the runtime, the receipt, the context.
mod run;

// Whole runs: the executor, sessions, suspensions, replay.
mod drive;

// The public API: one path per item. The core vocabulary is here at the
// root; the ledger, the models, tool calls, schemas and metrics have a
// module each.
pub use drive::{
    Aborted, AgentSummary, AwaitingDecision, Completed, DEFAULT_LEASE_TTL, Event, Events, Executor,
    Outcome, ReplayError, ReplayReport, RunSummary, Session, Step, Suspension,
};
pub use export::{Drift, Manifest, Publication};
pub use ledger::{Difference, Divergence};
pub use run::{
    Approval, Context, DEFAULT_MAX_STEPS, DEFAULT_REPAIRS, EarlierTurn, Generation, Progress,
    Returned, Runtime, ToolCall, ToolLoop, Toolset, Transcript,
};
pub use spec::{
    Agent, AgentInfo, ApproxTokens, Authority, AuthorityScope, Budget, BudgetExhausted, Condition,
    Contract, ContractBuilder, ContractParts, ContractView, Decision, EdgeInfo, Effect, EmptyOk,
    Endpoint, Escalation, Evidence, EvidenceList, Expiry, FailFast, Fallback, Gate, Granted, Graph,
    Handoff, Invariants, Lease, LeaseId, MAX_PAYLOAD_DEPTH, Moment, Node, OnReject, OpenEnded,
    OpenQuestions, Operation, OperationPart, Owns, Payload, PayloadError, Receipt, RecordError,
    RecordedPayload, Reject, RejectReason, Revocations, Route, RunError, SchemaName, SchemaSet,
    Scope, StopCondition, StopConditions, StopList, StopWhen, Then, TokenCounter, Tool,
    ToolCallPermit, ToolError, ToolErrorKind, ToolInfo, TransferRecord, TransferView, Transition,
    TurnRecord, Uncertainty, Unset, Unusable, Usage, Workflow,
};
pub use spec::{EvidenceSaid, Mode, OpenSaid};
// What backs an evidence item (its own line: the list above is long).
pub use spec::Citation;
// What a turn does with leases, and an operator's revocation as kept.
pub use spec::{
    LeaseAct, RenewalOutcome, RenewalRefused, RevokeRefused, SenderScope, StoredRevocation,
};
// Parallel branches: a fan-out, each branch's outcome, a record's place in it.
pub use spec::{Branch, Fork, ForkBranch, ForkInfo, JoinPolicy, Lineage};
// Verdicts at a join: a branch output's verdict, and a disagreement kept.
pub use spec::{BranchVerdict, Disagreement, Verdict};

/// Tool calls: the id of the call under way, the record each call leaves,
/// tool definitions in the Model Context Protocol's shape, and tool
/// versions (the digests the manifest publishes, the drift of a tool
/// changed without a version bump).
pub mod tool {
    pub use crate::export::{McpAnnotations, McpMeta, McpTool, mcp_object_schema, mcp_tools};
    pub use crate::export::{ToolDigests, ToolPart, UnversionedChange};
    pub use crate::run::{CallId, call_id};
    pub use crate::spec::{ToolCallRecord, ToolOutcome};
}

/// Canaries: per tool, prompts run through the model's tool loop with the
/// call a model should make and a predicate over its answer; replayed from
/// a recording in CI, run live against a model server before a change
/// ships (`workflow canary`).
pub mod canary {
    pub use crate::drive::canary::{
        Canaries, Canary, CanaryAnswer, CanaryMode, CanaryRecording, CanaryReport, CanaryRow,
        RecordedCanary, RecordedTool, Verdict, run, uncovered,
    };
}

/// Parallel branches, driven step by step (generated fork turns do it;
/// a hand-written workflow can too): open the fan-out with
/// `Runtime::fork`, start each branch with `Runtime::branch`, run the bodies
/// at once with [`run_branches`](parallel::run_branches), record each
/// outcome with `Runtime::settle`, and the join's transfer with
/// `Runtime::join`. See the book's chapter on parallel branches.
pub mod parallel {
    pub use crate::run::{
        BranchBody, BranchTurn, Finished, ForkRun, Handing, run_branches, run_branches_quorum,
    };
    pub use crate::spec::{Branch, Fork, ForkBranch, ForkInfo, JoinPolicy, Lineage};
    pub use crate::spec::{BranchVerdict, Disagreement, Verdict};
}

/// JSON Schemas: the root schema of a type, and the file it is exported to.
pub mod schema {
    pub use crate::export::{
        STRICT_ROOT_PROPERTY, StrictError, StrictSchema, file_name, openai_strict,
        openai_strict_violations,
    };
    pub use crate::spec::{
        STANDARD_FORMATS, is_standard_format, root_schema, rust_type_of, schema_name_or,
    };
}

/// Metrics following the OpenTelemetry GenAI conventions (feature `metrics`).
#[cfg(feature = "metrics")]
pub mod metrics {
    pub use crate::observe::metrics::*;
}

/// `#[derive(Verdict)]`: the field marked `#[verdict]` is a branch output's
/// verdict (see the book's chapter on parallel branches).
#[cfg(feature = "macros")]
pub use workflow_macros::Verdict;
#[cfg(feature = "macros")]
pub use workflow_macros::{agent, handoff, invariants, post, pre, tool, workflow};

/// Everything a workflow module needs: `use workflow_core::prelude::*;`.
pub mod prelude {
    pub use crate::drive::{
        Aborted, AwaitingDecision, Completed, Event, Events, Executor, Outcome, Step, Suspension,
    };
    // The ledgers, and what every user of one needs: its records and errors.
    #[cfg(feature = "sqlite")]
    pub use crate::ledger::SqliteLedger;
    pub use crate::ledger::{Ledger, LedgerError, LedgerRecord, MemoryLedger, Tampering};
    pub use crate::llm::{Model, ModelError, Prompt};
    pub use crate::spec::Citation;
    pub use crate::spec::Escalation;
    pub use crate::spec::{Branch, Lineage};
    pub use crate::spec::{BranchVerdict, Disagreement, Verdict};
    pub use crate::spec::{
        Budget, Contract, Decision, EmptyOk, Evidence, Expiry, FailFast, Handoff, Lease, Operation,
        Receipt, Reject, RejectReason, RunError, Scope, StopCondition, StopWhen, ToolError,
        ToolErrorKind, TransferView, Uncertainty, Unusable, Usage,
    };
    #[cfg(feature = "macros")]
    pub use workflow_macros::{Verdict, agent, handoff, invariants, post, pre, tool, workflow};
}

/// Not public API: what generated code names. May change in any release.
#[doc(hidden)]
pub mod __private {
    // Generated code names the core's items only through this module, by
    // their root names, so that moving files in the core never touches the
    // macro crate.
    pub use crate::encode::{
        Direct, GiveUp, ViaDirect, ViaSerde, WriteMsgpack, open as open_container,
    };
    pub use crate::ledger::PayloadFormat;
    pub use crate::run::{BranchBody, BranchTurn, Finished, ForkRun};
    pub use crate::run::{run_branches, run_branches_quorum};
    pub use crate::spec::PayloadWriter;
    pub use crate::spec::{Branch, Fork, ForkBranch, ForkInfo, JoinPolicy};
    pub use crate::spec::{BranchVerdict, Verdict, verdict_text};
    pub use crate::spec::{VerdictOfAnything, VerdictOfVerdict, VerdictProbe};

    /// The contract of a branch's output handed to its join: none (a
    /// branch's view is not a handoff; the questions it received go to the
    /// join's turn).
    pub fn no_contract<O>(_: &O) -> Option<crate::ContractView<'_>> {
        None
    }
    pub use crate::{
        Agent, AgentInfo, Authority, AuthorityScope, Condition, Context, ContractParts,
        ContractView, EdgeInfo, Effect, EvidenceList, Executor, Expiry, Fallback, Granted, Graph,
        Handoff, Invariants, Node, OnReject, OpenEnded, OpenQuestions, Owns, RecordedPayload,
        Reject, Route, RunError, Runtime, SchemaSet, StopConditions, Then, Tool, ToolCallPermit,
        ToolError, ToolInfo, TransferView, Transition, Workflow,
    };

    /// The index of the first edge from `from` to `to` in `graph`.
    pub const fn edge_index(
        graph: &crate::spec::Graph,
        from: crate::spec::Node,
        to: crate::spec::Node,
    ) -> u16 {
        graph.edge_index(from, to)
    }
    /// What a `#[pin(root_field)]` check says when the field differs from
    /// the pinned value (both shown as JSON).
    pub fn pin_mismatch<T, U>(field: &str, value: &T, root_field: &str, pinned: &U) -> String
    where
        T: serde::Serialize + ?Sized,
        U: serde::Serialize + ?Sized,
    {
        fn json<V: serde::Serialize + ?Sized>(v: &V) -> String {
            serde_json::to_string(v).unwrap_or_else(|e| format!("<{e}>"))
        }
        format!(
            "`{field}` is {} but the pinned `{root_field}` is {}",
            json(value),
            json(pinned)
        )
    }
    pub use crate::spec::schema_name_or;
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

    /// The JSON Schema (draft 2020-12) of `T`, for the static graph.
    pub fn schema_doc<T: schemars::JsonSchema>() -> schemars::Schema {
        crate::spec::root_schema_doc::<T>()
    }

    /// Writes the canonical bytes of `payload` (for `Workflow::encode_state`).
    pub fn encode<P: serde::Serialize>(
        out: &mut Vec<u8>,
        payload: &P,
    ) -> Result<crate::spec::PayloadFormat, String> {
        crate::encode::encode(out, payload).map_err(|e| e.to_string())
    }

    /// A handoff site of a generated `Route` impl: records the transfer of
    /// `payload` to agent `A` over `edge` (with `A`'s view of its contract;
    /// the receipt is decided when `A` receives it) and makes `A`'s state.
    // Always inlined into the route's arm: called, the payload went into
    // its argument, into the next state and that state out of the
    // `Transition`, three copies of it (`memcpy` above 128 bytes); inlined,
    // the compiler builds the state where the drive loop keeps it.
    #[inline(always)]
    pub fn hand_off<W: crate::Workflow, A: crate::Agent<W>>(
        run: &mut crate::Runtime<'_, W>,
        edge: u16,
        payload: A::Input,
        state: fn(A::Input) -> W::State,
    ) -> Result<crate::Transition<W>, crate::RunError>
    where
        A::Input: serde::Serialize,
    {
        run.handoff_as::<A>(edge, &payload)?;
        Ok(crate::Transition::To(state(payload)))
    }

    /// An `END` site of a generated `Route` impl: records the output over
    /// `edge` (with its contract, if it is a handoff) and ends the run.
    pub fn end<W: crate::Workflow>(
        run: &mut crate::Runtime<'_, W>,
        edge: u16,
        output: W::Output,
        contract: fn(&W::Output) -> Option<crate::ContractView<'_>>,
    ) -> Result<crate::Transition<W>, crate::RunError> {
        run.end(edge, &output, contract(&output))?;
        Ok(crate::Transition::End(output))
    }

    /// The root invariants as JSON (for `Invariants::to_json`).
    pub fn to_json<T: serde::Serialize>(value: &T) -> Result<serde_json::Value, String> {
        serde_json::to_value(value).map_err(|e| e.to_string())
    }

    pub use crate::spec::UnknownAuthority;
    /// The stop conditions of a handoff whose `#[stop]` part is missing (a
    /// compile error already).
    pub static NO_STOP: crate::StopWhen = crate::StopWhen::NONE;
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

    /// Asserts at compile time that `T` can be the `#[operation]` part of a
    /// handoff (not an `Option`, under any spelling).
    pub const fn assert_operation_part<T: crate::OperationPart>() {}

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
    #[doc = include_str!("../../book/src/parallel.md")]
    pub struct Parallel;
}
