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
    /// The tool's guard (`#[tool(guard = path)]`) refused the input: the
    /// tool's body never ran. Not retried (the same input is refused again).
    Refused,
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
            ToolErrorKind::Refused => f.write_str("refused by its guard"),
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

    /// An empty result of `tool`. When "nothing found" is a valid answer
    /// of a tool, its output type says so: [`EmptyOk`](crate::EmptyOk).
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
    /// The run was pinned to other root invariants than the executor that
    /// would carry it on (resume, decide) holds: refused before anything
    /// runs or is recorded. Build the executor with the recorded root.
    #[error(
        "run {run_id} cannot be carried on under another root: it was pinned to {recorded}, \
         this executor holds {held}; build the executor with the recorded root"
    )]
    RootDiffers {
        /// The run.
        run_id: u64,
        /// The root recorded on the run's first record, as JSON text.
        recorded: String,
        /// The executor's root, as JSON text (`null` for nothing to record).
        held: String,
    },
    /// The root invariants do not serialize, so a run with a ledger cannot
    /// record what it is pinned to: stopped before its first record.
    #[error("the root invariants cannot be recorded: {0}")]
    RootUnrecordable(String),
    /// A journaled tool call of the run is not what was journaled (edited,
    /// removed, reordered, moved from elsewhere, or not the call its turn's
    /// record holds): the run is not resumed, so that a forged outcome is
    /// never served nor recorded.
    #[error("the run cannot be resumed: {0}")]
    Journal(crate::spec::JournalTampering),
    /// A recorded payload cannot be read back within the limits a live run
    /// accepts (deeper than [`MAX_PAYLOAD_DEPTH`], a non-finite number, a
    /// key twice): written by hand or by another version.
    #[error("record #{seq} cannot be read back: {error}")]
    Unreadable {
        /// The record's sequence number.
        seq: u32,
        /// What is wrong with its payload.
        error: PayloadError,
    },
    /// A `Session::step` future was dropped before its turn completed: the
    /// run cannot go on (the agent's input went with the dropped turn).
    #[error("the run was interrupted: a step was cancelled before its turn completed")]
    Interrupted,
    /// `step` was called on a run that already ended.
    #[error("the run has already ended")]
    Finished,
}

/// The deepest nesting of arrays and objects a payload may have, counted
/// in its JSON form (`1` and `"a"` are 0 deep, `[1]` and `{"a": 1}` 1,
/// `{"a": [1]}` 2). The same limit holds live (a deeper payload is refused
/// at its first receipt with [`RejectReason::TooDeep`](crate::RejectReason)),
/// on read-back (`show`, `diff`), on resume and in replay, and for JSON
/// parsed from outside (a model's reply, a person's edit).
///
/// Why 64: half of serde_json's own parsing limit (128), so that a payload
/// still parses with serde_json's defaults inside the envelopes built around
/// it (a gate's input, `workflow show --json`, a suspension file, a model
/// reply's wrapper); far beyond any handoff (real payloads nest under 10);
/// and low enough that encoding, decoding and validating it recurse a few
/// kilobytes of stack, never a worker's whole stack.
pub const MAX_PAYLOAD_DEPTH: u32 = 64;

/// A payload that cannot cross a boundary as it is: one the encoder refuses
/// to record, or JSON text (a model's reply, a person's edit, a stored
/// record) that is not taken as it stands.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PayloadError {
    /// Arrays and objects nest deeper than the limit.
    #[error("the payload nests arrays and objects deeper than the limit of {limit} levels")]
    TooDeep {
        /// The limit ([`MAX_PAYLOAD_DEPTH`]).
        limit: u32,
    },
    /// A number is NaN or infinite (JSON cannot hold it).
    #[error("the payload holds the non-finite number {value} at `{path}`, which JSON cannot hold")]
    NonFinite {
        /// Where (`prices[2]`; empty for the payload itself).
        path: String,
        /// `NaN`, `inf` or `-inf`.
        value: String,
    },
    /// An object holds the same key twice (which one counts would be a
    /// guess).
    #[error("the payload holds the key `{key}` twice in one object")]
    DuplicateKey {
        /// The key.
        key: String,
    },
    /// Anything else: not valid JSON or MessagePack, not serializable.
    #[error("{0}")]
    Invalid(String),
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
    /// A stored record of a run does not read as a record: not JSON, not
    /// a record's shape, or stored under another sequence number than the
    /// one it carries. The other runs are not affected.
    #[error("run {run_id}, record #{seq}: {why}")]
    CorruptRecord {
        /// The run.
        run_id: u64,
        /// The record's place in the run (its stored sequence number).
        seq: u32,
        /// What is wrong with it.
        why: String,
    },
    /// A run's stored head (its last sequence number and hash) does not
    /// read.
    #[error("run {run_id}, head: {why}")]
    CorruptHead {
        /// The run.
        run_id: u64,
        /// What is wrong with it.
        why: String,
    },
    /// The file is not a ledger: not an SQLite database, another
    /// application's database, or tables of another shape. Nothing was
    /// written to it.
    #[error("{} is not a ledger: {why}", path.display())]
    NotALedger {
        /// The file.
        path: std::path::PathBuf,
        /// Why it is not one.
        why: String,
    },
    /// The file is a ledger of a format this library does not read (a
    /// newer library wrote it, or its version number is unknown). Nothing
    /// was written to it.
    #[error(
        "{} is a ledger of format version {found}; this library reads format versions 1 to {supported} (a newer workflow-core reads it)",
        path.display()
    )]
    UnsupportedVersion {
        /// The file.
        path: std::path::PathBuf,
        /// The version the file carries.
        found: i64,
        /// The newest version this library reads and writes
        /// (`LEDGER_FORMAT`).
        supported: u32,
    },
    /// The run is claimed by another holder whose lease has not expired:
    /// what a second resumer of a run gets. Try again after `expires_at_ms`
    /// (the holder renews its lease at each commit while it works).
    #[error(
        "run {run_id} is claimed by `{holder}` until {expires_at_ms} ms after the Unix epoch (in {remaining_ms} ms): it is being worked on; try again once the lease has expired"
    )]
    Claimed {
        /// The run.
        run_id: u64,
        /// Who holds the lease.
        holder: String,
        /// When the lease expires, in ms since the Unix epoch.
        expires_at_ms: u64,
        /// How long that was from the claim, in ms.
        remaining_ms: u64,
    },
    /// A write made under a lease that was taken over: a newer claim on the
    /// run exists, so the holder of the older one may not commit anything.
    #[error(
        "run {run_id}: the lease with fencing token {token} was taken over (token {current} now holds the run); nothing was written"
    )]
    Fenced {
        /// The run.
        run_id: u64,
        /// The token the write was made under.
        token: u64,
        /// The newest token of the run.
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
        RunError::RootDiffers { .. } => "root_differs",
        RunError::RootUnrecordable(_) => "root_unrecordable",
        RunError::Journal(_) => "journal",
        RunError::Unreadable { .. } => "unreadable",
        RunError::Interrupted => "interrupted",
        RunError::Finished => "finished",
        RunError::ToolFailed { .. } => "tool_failed",
        RunError::BudgetExhausted { .. } => "budget_exhausted",
        RunError::DeadlinePassed { .. } => "deadline_passed",
        RunError::Suspended { .. } => "suspended",
        RunError::Decision(_) => "decision",
    }
}
