//! What a run ends with: its output and transcript (`Completed`), or the
//! error that stopped it and everything recorded until then (`Aborted`).

use crate::run::Transcript;
use std::fmt;

use crate::spec::RunError;
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

impl Aborted {
    /// The suspension of a run stopped by [`RunError::Suspended`]: its
    /// records, hash-chained, to decide on with `Executor::decide` (or to
    /// keep as bytes until then). `None` for a run stopped otherwise.
    pub fn suspension(&self) -> Option<crate::drive::Suspension> {
        if !matches!(self.error, RunError::Suspended { .. }) {
            return None;
        }
        let mut records: Vec<crate::ledger::LedgerRecord> =
            Vec::with_capacity(self.transcript.len());
        for i in 0..self.transcript.len() {
            let prev = records
                .last()
                .map_or(crate::ledger::GENESIS, |r| r.hash.as_str());
            records.push(self.transcript.ledger_record(i, prev).ok()?);
        }
        crate::drive::Suspension::from_records(records)
    }
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
