//! What a replay reports: identical, or the first divergence; and the
//! records it cannot replay.

use crate::ledger::Tampering;
use serde::{Deserialize, Serialize};
use std::fmt;

use crate::ledger::Divergence;
/// What [`Executor::replay`](crate::Executor::replay) found.
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
    /// Where the divergent transition stands in a fan-out, as recorded:
    /// the branch (fan-out and index) whose turn parted from the recording,
    /// or the join. `None` outside fan-outs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<crate::spec::Lineage>,
}

impl ReplayReport {
    /// Whether the run replays identically.
    pub fn is_identical(&self) -> bool {
        self.divergence.is_none()
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
            Some(d) => match &self.branch {
                Some(lineage) => write!(f, "run {} diverges in the {lineage}, at {d}", self.run_id),
                None => write!(f, "run {} diverges at {d}", self.run_id),
            },
        }
    }
}

/// Records that cannot be replayed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
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
    /// [`Executor::replay_run`](crate::Executor::replay_run) on an executor without a ledger.
    #[error("no ledger is attached (`Executor::with_ledger`)")]
    NoLedger,
    /// The ledger could not give the run's records back.
    #[error("run {run_id} cannot be read: {error}")]
    Ledger {
        /// The run.
        run_id: u64,
        /// The ledger's error.
        #[source]
        error: crate::spec::LedgerError,
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
