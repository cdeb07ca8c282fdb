//! What a replay reports: identical, or the first divergence; and the
//! records it cannot replay.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::ledger::Tampering;

/// What [`Executor::replay`] found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayReport {
    /// The workflow that recorded the run.
    pub workflow: String,
    /// The run.
    pub run_id: u64,
    /// How many transitions the recording holds.
    pub transitions: u32,
    /// The recording stops while the run was still going (a receiver was
    /// working when its process died, and the run was never resumed): the
    /// replay stops there too.
    pub unfinished: bool,
    /// The first transition where the replay parts from the recording;
    /// `None` when it replays identically.
    pub divergence: Option<Divergence>,
}

impl ReplayReport {
    /// Whether the run replays identically.
    pub fn is_identical(&self) -> bool {
        self.divergence.is_none()
    }
}

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
pub enum Difference {
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
            Difference::Route => f.write_str("the sender or receiver differs"),
            Difference::PayloadType => f.write_str("the payload type differs"),
            Difference::Redelivery => f.write_str("one is a redelivery, the other is not"),
            Difference::ToolCall { index } => write!(f, "tool call {index} differs"),
            Difference::Payload => f.write_str("the payload differs"),
            Difference::Turn => {
                f.write_str("the turn's model calls, usage or open questions differ")
            }
            Difference::Receipt => f.write_str("the receipt differs"),
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

impl fmt::Display for ReplayReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.divergence {
            None if self.unfinished => write!(
                f,
                "run {} replays identically for its {} recorded transitions (the recording stops mid-run)",
                self.run_id, self.transitions
            ),
            None => write!(
                f,
                "run {} replays identically ({} transitions)",
                self.run_id, self.transitions
            ),
            Some(d) => write!(f, "run {} diverges at {d}", self.run_id),
        }
    }
}

/// Records that cannot be replayed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    /// There are no records.
    #[error("there are no records to replay")]
    NoRecords,
    /// The records do not verify: a replay of them would prove nothing.
    #[error("run {run_id} does not verify: {tampering}")]
    Tampered {
        /// The run.
        run_id: u64,
        /// What `verify` found.
        tampering: Tampering,
    },
    /// The records were written by another workflow.
    #[error("run {run_id} was recorded by workflow `{recorded}`, not `{replaying}`")]
    OtherWorkflow {
        /// The run.
        run_id: u64,
        /// The workflow that recorded it.
        recorded: String,
        /// The workflow asked to replay it.
        replaying: &'static str,
    },
    /// [`Executor::replay_run`] on an executor without a ledger.
    #[error("no ledger is attached (`Executor::with_ledger`)")]
    NoLedger,
    /// The ledger could not give the run's records back.
    #[error("run {run_id} cannot be read: {error}")]
    Ledger {
        /// The run.
        run_id: u64,
        /// The ledger's error.
        error: String,
    },
    /// The recorded workflow input cannot be read as this workflow's input.
    #[error("run {run_id}'s recorded input does not read: {error}")]
    Input {
        /// The run.
        run_id: u64,
        /// Why.
        error: String,
    },
}
