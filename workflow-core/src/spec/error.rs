//! What goes wrong, in words both sides of a seam read: an agent's refusal
//! (`Reject`), a tool's failure (`ToolError`), why a run stopped (`RunError`)
//! and why a store failed (`LedgerError`).

use crate::spec::RejectReason;
use std::borrow::Cow;
use std::fmt;

/// An agent body's refusal to produce an output.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct Reject {
    reason: Cow<'static, str>,
    tool: Option<ToolError>,
    escalate: bool,
}

impl Reject {
    /// A refusal with a reason.
    pub fn because(reason: impl Into<Cow<'static, str>>) -> Self {
        Reject {
            reason: reason.into(),
            tool: None,
            escalate: false,
        }
    }

    /// Not a refusal: a request for a person's decision. The run is
    /// suspended with the agent's input; once a person approves (or edits
    /// the input), the agent's turn runs again and
    /// [`Context::approval`](crate::Context::approval) says so.
    pub fn escalate(question: impl Into<Cow<'static, str>>) -> Self {
        Reject {
            reason: question.into(),
            tool: None,
            escalate: true,
        }
    }

    /// Whether this is a request for a person's decision.
    pub fn is_escalation(&self) -> bool {
        self.escalate
    }

    /// The tool error the refusal came from, if it came from one.
    pub fn tool_error(&self) -> Option<&ToolError> {
        self.tool.as_ref()
    }

    /// The reason.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

impl From<ToolError> for Reject {
    /// The refusal of an agent whose tool failed (`?` on `cx.call`): the
    /// tool's error is kept, see [`Reject::tool_error`].
    fn from(e: ToolError) -> Self {
        Reject {
            reason: Cow::Owned(e.to_string()),
            tool: Some(e),
            escalate: false,
        }
    }
}

/// A tool call that did not produce a usable result.
///
/// Results fail fast: an empty result, a partial page, a non-success status
/// or a schema mismatch is one of these, never a value for the next agent
/// to guess around (see [`FailFast`](crate::FailFast)).
#[derive(
    Debug,
    Clone,
    PartialEq,
    Eq,
    thiserror::Error,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(deny_unknown_fields)]
#[error("tool `{tool}` failed{}: {message}", kind_note(*kind))]
pub struct ToolError {
    /// The tool's name.
    pub tool: Cow<'static, str>,
    /// What class of failure.
    pub kind: ToolErrorKind,
    /// What went wrong.
    pub message: String,
}

/// The class of a [`ToolError`]: what the executor and the fallback policy
/// act on.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolErrorKind {
    /// The tool itself failed (a transport error, an exception): retried
    /// under a retry policy.
    Failed,
    /// The tool answered with a non-success status (retried under a retry
    /// policy when the status is 429 or 5xx).
    Status(u16),
    /// The result was empty where a value was expected.
    Empty,
    /// The result was incomplete (a page of more, a truncated list).
    Partial,
    /// The result did not match the tool's output schema.
    Schema,
    /// The call is outside the agent's authority: the handoff it works
    /// under delegates another authority, or the delegation has expired, or
    /// (under no delegation) the agent does not own the authority the tool
    /// needs.
    OutOfScope,
    /// The run's tool-call budget is used up.
    Budget,
    /// The tool ran past the time it was given.
    Timeout,
}

/// ` (partial result)` for every class but a plain failure.
fn kind_note(kind: ToolErrorKind) -> String {
    match kind {
        ToolErrorKind::Failed => String::new(),
        kind => format!(" ({kind})"),
    }
}

impl ToolErrorKind {
    /// Whether a retry policy retries this failure: transport failures,
    /// timeouts, 429 and 5xx statuses. An empty or partial result, a schema
    /// mismatch, a scope or budget refusal would fail the same way again.
    pub fn is_transient(self) -> bool {
        match self {
            ToolErrorKind::Failed | ToolErrorKind::Timeout => true,
            ToolErrorKind::Status(code) => code == 429 || code >= 500,
            _ => false,
        }
    }
}

impl fmt::Display for ToolErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolErrorKind::Failed => f.write_str("failed"),
            ToolErrorKind::Status(code) => write!(f, "status {code}"),
            ToolErrorKind::Empty => f.write_str("empty result"),
            ToolErrorKind::Partial => f.write_str("partial result"),
            ToolErrorKind::Schema => f.write_str("schema mismatch"),
            ToolErrorKind::OutOfScope => f.write_str("out of scope"),
            ToolErrorKind::Budget => f.write_str("budget exhausted"),
            ToolErrorKind::Timeout => f.write_str("timed out"),
        }
    }
}

impl ToolError {
    /// A failure of `tool` (class [`ToolErrorKind::Failed`]).
    pub fn new(tool: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        ToolError::of(tool, ToolErrorKind::Failed, message)
    }

    /// A failure of `tool` of class `kind`.
    pub fn of(
        tool: impl Into<Cow<'static, str>>,
        kind: ToolErrorKind,
        message: impl Into<String>,
    ) -> Self {
        ToolError {
            tool: tool.into(),
            kind,
            message: message.into(),
        }
    }

    /// An empty result of `tool`.
    pub fn empty(tool: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        ToolError::of(tool, ToolErrorKind::Empty, message)
    }

    /// A partial result of `tool`.
    pub fn partial(tool: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        ToolError::of(tool, ToolErrorKind::Partial, message)
    }

    /// A non-success `status` answered by `tool`.
    pub fn status(
        tool: impl Into<Cow<'static, str>>,
        status: u16,
        message: impl Into<String>,
    ) -> Self {
        ToolError::of(tool, ToolErrorKind::Status(status), message)
    }
}

/// Why a run stopped before its end.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The receiver rejected a transfer at its receipt; its body never ran.
    #[error("transfer {from} -> {to} rejected: {reason}")]
    Rejected {
        /// The sender.
        from: &'static str,
        /// The receiver.
        to: &'static str,
        /// Why.
        reason: RejectReason,
    },
    /// An agent's output broke one of its `#[post(..)]` conditions.
    #[error("agent `{agent}` broke post-condition `{condition}`: {message}")]
    PostCondition {
        /// The agent.
        agent: &'static str,
        /// The condition's source text.
        condition: &'static str,
        /// The condition's message.
        message: &'static str,
    },
    /// An agent's body returned an error.
    #[error("agent `{agent}` failed: {error}")]
    AgentFailed {
        /// The agent.
        agent: &'static str,
        /// Its refusal.
        error: Reject,
    },
    /// An agent's body ran past its declared timeout.
    #[error("agent `{agent}` timed out after {after_ms} ms")]
    Timeout {
        /// The agent.
        agent: &'static str,
        /// The declared timeout.
        after_ms: u64,
    },
    /// A tool call failed under an `abort` fallback (the default): the run
    /// stops at the end of the turn, whatever the agent did with the error.
    #[error("agent `{agent}`: {error}")]
    ToolFailed {
        /// The agent whose turn made the call.
        agent: &'static str,
        /// The tool's error.
        error: ToolError,
    },
    /// A budget of the run is used up.
    #[error("agent `{agent}` used up the run's {budget} budget of {limit} ({spent} spent)")]
    BudgetExhausted {
        /// The agent whose turn spent it.
        agent: &'static str,
        /// Which budget.
        budget: Cow<'static, str>,
        /// Its limit.
        limit: u64,
        /// What was spent.
        spent: u64,
    },
    /// The run's deadline passed during an agent's turn.
    #[error("the run's deadline of {after_ms} ms passed during agent `{agent}`'s turn")]
    DeadlinePassed {
        /// The agent.
        agent: &'static str,
        /// The deadline, in ms after the run started.
        after_ms: u64,
    },
    /// The run is suspended: a transfer to `agent` waits for a person's
    /// decision ([`Aborted::suspension`](crate::Aborted::suspension), `Executor::decide`).
    #[error("the run is suspended: the transfer to `{agent}` waits for a decision: {reason}")]
    Suspended {
        /// The receiver whose transfer waits.
        agent: &'static str,
        /// Why.
        reason: crate::spec::Escalation,
    },
    /// A decision on a suspended run could not be applied (the run stays
    /// suspended).
    #[error("the decision cannot be applied: {0}")]
    Decision(String),
    /// A payload could not be serialized for the record.
    #[error("payload {from} -> {to} could not be encoded: {error}")]
    Encode {
        /// The sender.
        from: &'static str,
        /// The receiver.
        to: &'static str,
        /// The serializer's message.
        error: String,
    },
    /// A hand-written workflow drove the [`Runtime`](crate::Runtime) out of
    /// order (generated workflows never do): what was wrong.
    #[error("the runtime was driven out of order: {0}")]
    Protocol(String),
    /// The ledger could not store a record; the run stopped before any
    /// agent worked on the unrecorded transfer.
    #[error("the ledger could not store a record")]
    Ledger(#[source] LedgerError),
    /// A run could not be resumed from its records.
    #[error("the run cannot be resumed: {0}")]
    Resume(String),
    /// A `Session::step` future was dropped before its turn completed: the
    /// run cannot go on (the agent's input went with the dropped turn).
    #[error("the run was interrupted: a step was cancelled before its turn completed")]
    Interrupted,
    /// `step` was called on a run that already ended.
    #[error("the run has already ended")]
    Finished,
}

/// A ledger that could not store or give back records.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LedgerError {
    /// The storage failed (I/O, SQLite).
    #[error("ledger storage failed: {0}")]
    Storage(String),
    /// What the storage gave back is not a valid record.
    #[error("ledger record is corrupt: {0}")]
    Corrupt(String),
    /// A record with this run and sequence number is already stored.
    #[error("run {run_id} already has a record #{seq}")]
    Duplicate {
        /// The run.
        run_id: u64,
        /// The sequence number.
        seq: u32,
    },
    /// A write made under a lease on the run was refused: another holder
    /// has claimed the run since, with a newer fencing token.
    #[error(
        "run {run_id}: the lease with fencing token {token} was superseded by token {current}; this holder no longer owns the run"
    )]
    Fenced {
        /// The run.
        run_id: u64,
        /// The token the write was made under.
        token: u64,
        /// The run's current token.
        current: u64,
    },
}

/// The `error.type` of a run error (a stable, low-cardinality name).
#[cfg(any(feature = "tracing", feature = "metrics"))]
pub(crate) fn error_type(error: &RunError) -> &'static str {
    match error {
        RunError::Rejected { .. } => "rejected",
        RunError::PostCondition { .. } => "post_condition",
        RunError::AgentFailed { .. } => "agent_failed",
        RunError::Timeout { .. } => "timeout",
        RunError::Encode { .. } => "encode",
        RunError::Ledger(_) => "ledger",
        RunError::Protocol(_) => "protocol",
        RunError::Resume(_) => "resume",
        RunError::Interrupted => "interrupted",
        RunError::Finished => "finished",
        RunError::ToolFailed { .. } => "tool_failed",
        RunError::BudgetExhausted { .. } => "budget_exhausted",
        RunError::DeadlinePassed { .. } => "deadline_passed",
        RunError::Suspended { .. } => "suspended",
        RunError::Decision(_) => "decision",
    }
}
