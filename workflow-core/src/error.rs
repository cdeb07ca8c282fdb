//! Typed errors: each names the agent, the edge or the condition involved.

use std::borrow::Cow;
use std::fmt;

use crate::record::{RejectReason, Transcript};

/// An agent body's refusal to produce an output.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct Reject {
    reason: Cow<'static, str>,
    tool: Option<ToolError>,
}

impl Reject {
    /// A refusal with a reason.
    pub fn because(reason: impl Into<Cow<'static, str>>) -> Self {
        Reject {
            reason: reason.into(),
            tool: None,
        }
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
        }
    }
}

/// A tool call that did not produce a usable result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("tool `{tool}` failed: {message}")]
pub struct ToolError {
    /// The tool's name.
    pub tool: Cow<'static, str>,
    /// What went wrong.
    pub message: String,
}

impl ToolError {
    /// A failure of `tool`.
    pub fn new(tool: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        ToolError {
            tool: tool.into(),
            message: message.into(),
        }
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
    #[error("the ledger could not store a record: {0}")]
    Ledger(String),
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

/// A run that reached its end.
#[derive(Debug)]
pub struct Completed<O> {
    /// The workflow output.
    pub output: O,
    /// Every transfer of the run.
    pub transcript: Transcript,
}

/// A run that stopped with an error, and everything it recorded until then.
#[derive(Debug)]
pub struct Aborted {
    /// What stopped the run.
    pub error: RunError,
    /// Every transfer of the run, the rejected one included.
    pub transcript: Transcript,
}

impl fmt::Display for Aborted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "run {} aborted: {}",
            self.transcript.run_id(),
            self.error
        )
    }
}

impl std::error::Error for Aborted {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}
