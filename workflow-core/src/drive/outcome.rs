//! What a run ends with: its output and transcript (`Completed`), or the
//! error that stopped it and everything recorded until then (`Aborted`);
//! and the three ways a run can stand when it returns, as one enum
//! (`Outcome`): completed, awaiting a decision, stopped.

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

/// How a run stands when it returns: it completed with its output, it waits
/// for a person's decision, or it stopped. A suspension is an outcome of its
/// own here, not an error: match on it and decide
/// ([`Executor::run_outcome`](crate::Executor::run_outcome); any
/// `Result<Completed, Aborted>`, from `run`, `resume` or `decide`, converts
/// with `Outcome::from`).
#[derive(Debug)]
#[must_use = "an outcome says whether the run completed, waits for a decision or stopped"]
pub enum Outcome<O> {
    /// The run reached its end.
    Completed(Completed<O>),
    /// The run waits for a person's decision on a transfer.
    AwaitingDecision(AwaitingDecision),
    /// The run stopped: what stopped it, and everything recorded until then.
    Stopped(Aborted),
}

/// A run suspended for a person's decision, with what the person needs to
/// decide: which agent's transfer waits and why, and the suspension to
/// decide on (`Executor::decide`; its records hold the payload:
/// [`Suspension::payload_json`](crate::Suspension::payload_json)).
#[derive(Debug)]
pub struct AwaitingDecision {
    /// The receiver whose transfer waits.
    pub agent: &'static str,
    /// Why the run waits.
    pub reason: crate::spec::Escalation,
    /// The run's records up to the escalated transfer: what
    /// `Executor::decide` takes.
    pub suspension: crate::drive::Suspension,
    /// Every transfer of the run, the escalated one last.
    pub transcript: Transcript,
}

impl<O> Outcome<O> {
    /// The transcript of the run, whatever its outcome.
    pub fn transcript(&self) -> &Transcript {
        match self {
            Outcome::Completed(done) => &done.transcript,
            Outcome::AwaitingDecision(waiting) => &waiting.transcript,
            Outcome::Stopped(aborted) => &aborted.transcript,
        }
    }

    /// The completed run, or the outcome as an error: the `Result` that
    /// `Executor::run` returns (a suspension is `RunError::Suspended`).
    #[allow(
        clippy::result_large_err,
        reason = "the same `Result` that `Executor::run` returns, by value"
    )]
    pub fn into_result(self) -> Result<Completed<O>, Aborted> {
        match self {
            Outcome::Completed(done) => Ok(done),
            Outcome::AwaitingDecision(waiting) => Err(Aborted {
                error: RunError::Suspended {
                    agent: waiting.agent,
                    reason: waiting.reason,
                },
                transcript: waiting.transcript,
            }),
            Outcome::Stopped(aborted) => Err(aborted),
        }
    }
}

impl<O> From<Result<Completed<O>, Aborted>> for Outcome<O> {
    /// A suspended run (`RunError::Suspended`) becomes
    /// [`Outcome::AwaitingDecision`], with its suspension built from the
    /// transcript; should that fail (a record that does not encode), the
    /// run stays [`Outcome::Stopped`] with its error, and nothing is lost.
    fn from(result: Result<Completed<O>, Aborted>) -> Self {
        let aborted = match result {
            Ok(done) => return Outcome::Completed(done),
            Err(aborted) => aborted,
        };
        let suspension = aborted.suspension();
        match (aborted.error, suspension) {
            (RunError::Suspended { agent, reason }, Some(suspension)) => {
                Outcome::AwaitingDecision(AwaitingDecision {
                    agent,
                    reason,
                    suspension,
                    transcript: aborted.transcript,
                })
            }
            (error, _) => Outcome::Stopped(Aborted {
                error,
                transcript: aborted.transcript,
            }),
        }
    }
}
