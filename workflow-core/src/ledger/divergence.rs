//! How a run differs from its recording: the first transition (or tool
//! call) where the two part, recorded against replayed.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::Mutex;

/// The first transition where a replay parts from its recording.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Divergence {
    /// The transition's sequence number.
    pub seq: u32,
    /// What differs.
    pub difference: Difference,
    /// The recorded side, as JSON text (`None` when the recording has
    /// nothing there).
    pub recorded: Option<String>,
    /// The replayed side, as JSON text (`None` when the replay has nothing
    /// there).
    pub replayed: Option<String>,
}

/// What differs at a [`Divergence`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "what", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Difference {
    /// The root invariants: the replaying executor holds another root than
    /// the one the run was pinned to (recorded on its first record).
    Root,
    /// The sender or the receiver.
    Route,
    /// The payload's type.
    PayloadType,
    /// One transfer is a redelivery (after an escalation or a failed turn),
    /// the other a new handoff.
    Redelivery,
    /// A tool call of the turn that produced the transfer: another tool,
    /// other arguments, a call the recording does not have or one it has
    /// that the replay did not make.
    ToolCall {
        /// The call's index in its turn.
        index: u32,
    },
    /// The payload's canonical bytes.
    Payload,
    /// The rest of the turn that produced the transfer (usage, questions
    /// handed to the caller).
    Turn,
    /// The receiver's receipt.
    Receipt,
    /// The record's place in a fan-out (its branch, its parent, the join's
    /// heads).
    Lineage,
    /// The recording was made in audit mode and let this transition (or a
    /// tool call of the turn that produced it) through with failed checks:
    /// replayed under enforcement, it is stopped here. The first such
    /// transition is the one enforcement would have stopped.
    Enforced {
        /// What enforcement stops it for (the replayed receipt's reason, or
        /// the refused tool call's).
        reason: String,
    },
    /// The replayed run stopped before this recorded transition.
    Stopped {
        /// What stopped it.
        error: String,
    },
    /// The replayed run went on past the end of the recording.
    WentOn,
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Difference::Root => f.write_str("the pinned root invariants differ"),
            Difference::Route => f.write_str("the sender or receiver differs"),
            Difference::PayloadType => f.write_str("the payload type differs"),
            Difference::Redelivery => f.write_str("one is a redelivery, the other is not"),
            Difference::ToolCall { index } => write!(f, "tool call {index} differs"),
            Difference::Payload => f.write_str("the payload differs"),
            Difference::Turn => {
                f.write_str("the turn's model calls, usage or open questions differ")
            }
            Difference::Receipt => f.write_str("the receipt differs"),
            Difference::Lineage => f.write_str("the place in the fan-out differs"),
            Difference::Enforced { reason } => write!(
                f,
                "recorded in audit mode, stopped by enforcement here: {reason}"
            ),
            Difference::Stopped { error } => write!(f, "the replay stopped here: {error}"),
            Difference::WentOn => f.write_str("the replay goes on past the end of the recording"),
        }
    }
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "transition #{}: {}", self.seq, self.difference)?;
        let none = "(nothing)";
        write!(
            f,
            "\n  recorded: {}\n  replayed: {}",
            self.recorded.as_deref().unwrap_or(none),
            self.replayed.as_deref().unwrap_or(none)
        )
    }
}

/// Where the first divergence found goes, by the tool calls or the
/// comparison of records, whichever sees one first.
#[derive(Default)]
pub(crate) struct FirstDivergence(Mutex<Option<Divergence>>);

impl FirstDivergence {
    pub(crate) fn note(&self, divergence: Divergence) {
        let mut slot = self.0.lock().unwrap_or_else(|p| p.into_inner());
        slot.get_or_insert(divergence);
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).is_none()
    }

    pub(crate) fn take(&self) -> Option<Divergence> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}
