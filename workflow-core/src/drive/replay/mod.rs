//! Replaying a recorded run (guarantee 12): the run again from its recorded
//! workflow input, every tool response served from the record, each new
//! transfer compared with the recorded one; the first transition where they
//! part is reported.
//!
//! The comparison is a ledger: the replayed run commits its records to it
//! as any run commits to its ledger, and a record that differs from the one
//! recorded at its place is refused, which stops the replay right there. No
//! agent works on a transfer the recording does not have.

mod comparison;
mod report;

use std::sync::Arc;

use crate::drive::Executor;
use crate::ledger::LedgerRecord;
use crate::run::{Limits, Runtime};
use crate::spec::Decision;
use crate::spec::RunError;
use crate::spec::{Endpoint, Receipt, RejectReason};
use crate::spec::{RecordedPayload, Workflow};

use comparison::{Comparison, summary};
pub use report::{ReplayError, ReplayReport};

use crate::ledger::RecordedCalls;

use crate::ledger::{Difference, Divergence, FirstDivergence};
impl<W: Workflow> Executor<W> {
    /// Runs a recorded run again, from its recorded workflow input, with
    /// this executor's workflow, root invariants and limits: every tool
    /// response and every model reply is served from the record instead of
    /// calling the tool or the model, and
    /// each person's decision (approve, edit, reject) is taken again as
    /// recorded. Each new transfer is compared with the recorded one
    /// (sender and receiver, payload bytes, the turn's tool calls, receipt);
    /// the replay stops at the first that differs and reports it.
    ///
    /// A tool call whose tool or arguments differ from the recorded call at
    /// its place (the turn, the call's index) is a divergence, never a live
    /// call. The records are verified first.
    ///
    /// Deterministic when the agents are functions of their input, the
    /// pinned root and their tools' results (a clock an agent reads is not
    /// recorded). Build the executor with the root the run was recorded
    /// with: the root is recorded on the run's first record, and a replay
    /// under another root reports `Difference::Root` at transition `#0`.
    ///
    /// An operator's revocations kept by a ledger are not in `records`:
    /// [`replay_run`](Self::replay_run) applies them, or pass them to
    /// [`replay_with_revocations`](Self::replay_with_revocations).
    pub async fn replay(&self, records: &[LedgerRecord]) -> Result<ReplayReport, ReplayError> {
        self.replay_with_revocations(records, &[]).await
    }

    /// [`replay`](Self::replay), applying an operator's `revocations` of
    /// the run's leases (as [`Ledger::revocations`](crate::ledger::Ledger::revocations)
    /// gives them) where the recorded run met them: each from the record
    /// after the one the run had committed when it was revoked. A
    /// revocation a grantor made from its turn is recorded with the turn
    /// and made again by the replayed agent.
    pub async fn replay_with_revocations(
        &self,
        records: &[LedgerRecord],
        revocations: &[crate::spec::StoredRevocation],
    ) -> Result<ReplayReport, ReplayError> {
        let first = records.first().ok_or(ReplayError::NoRecords)?;
        let run_id = first.run_id;
        if first.workflow != W::GRAPH.name {
            return Err(ReplayError::OtherWorkflow {
                run_id,
                recorded: first.workflow.clone(),
                replaying: W::GRAPH.name,
            });
        }
        crate::ledger::verify(run_id, records, None)
            .map_err(|tampering| ReplayError::Tampered { run_id, tampering })?;
        let input_error = |error: String| ReplayError::Input { run_id, error };
        if first.from != Endpoint::Start {
            return Err(input_error(format!(
                "record #0 comes from {}, not START",
                first.from
            )));
        }
        let bytes = first
            .payload_bytes()
            .map_err(|e| input_error(e.to_string()))?;
        let input: W::Input = RecordedPayload {
            format: first.payload_format,
            bytes: &bytes,
        }
        .decode()
        .map_err(input_error)?;

        let first_divergence = Arc::new(FirstDivergence::default());
        let comparison = Comparison::new(records, first_divergence.clone());
        // Model replies are served from the record too (by request digest):
        // a request the recording does not hold fails the turn, and the
        // replay reports where.
        let recorded_model: Option<Arc<dyn crate::llm::Model>> = records
            .iter()
            .any(|r| r.turn.as_ref().is_some_and(|t| !t.model_calls.is_empty()))
            .then(|| {
                Arc::new(crate::llm::RecordedModel::from_ledger(records))
                    as Arc<dyn crate::llm::Model>
            });
        let limits = self.limits();
        let mut run = Runtime::<W>::numbered(
            self.root(),
            self.deps(),
            Limits {
                ledger: Some(&comparison),
                model: recorded_model.as_ref().or(limits.model),
                ..limits
            },
            run_id,
        );
        // The replay is pinned to this executor's root; its first record is
        // compared with the recorded header.
        run.pin_root();
        run.apply_revocations(
            revocations
                .iter()
                .filter(|r| r.lease.run_id == run_id)
                .map(|r| (r.lease.seq, r.after)),
        );
        run.serve_recorded(RecordedCalls::replaying(
            records,
            first_divergence.clone(),
            comparison.unfinished,
        ));
        let mut state = W::start(input, &mut run);
        let stopped = loop {
            let ended = match state {
                Ok(state) => W::run_to_end(state, &mut run).await,
                Err(e) => Err(e),
            };
            match ended {
                Ok(_) => break None,
                Err(RunError::Suspended { .. }) if first_divergence.is_empty() => {
                    let next = records.get(run.transcript.len());
                    match next.and_then(recorded_decision) {
                        Some(decision) => state = decide_again(&mut run, decision),
                        None => break None,
                    }
                }
                Err(error) => break Some(error),
            }
        };

        let transitions = records.len() as u32;
        let unfinished = comparison.unfinished;
        let report = |divergence: Option<Divergence>| ReplayReport {
            workflow: first.workflow.clone(),
            run_id,
            transitions,
            unfinished,
            branch: divergence
                .as_ref()
                .and_then(|d| records.get(d.seq as usize))
                .and_then(|r| r.lineage.clone()),
            divergence,
        };
        if let Some(divergence) = first_divergence.take() {
            return Ok(report(Some(divergence)));
        }
        let committed = comparison.committed();
        if committed < records.len() && !comparison.reached_end() {
            // The replay stopped short of the recording's end.
            let error = stopped.map_or_else(
                || "the run ended".to_owned(),
                |e| match e {
                    RunError::Suspended { agent, reason } => {
                        format!("the run was suspended at {agent}: {reason}")
                    }
                    e => e.to_string(),
                },
            );
            return Ok(report(Some(Divergence {
                seq: committed as u32,
                difference: Difference::Stopped { error },
                recorded: records.get(committed).map(summary),
                replayed: None,
            })));
        }
        Ok(report(None))
    }

    /// Replays run `run_id` of the attached ledger (see
    /// [`replay`](Self::replay)).
    pub async fn replay_run(&self, run_id: u64) -> Result<ReplayReport, ReplayError> {
        let ledger = self.ledger().ok_or(ReplayError::NoLedger)?;
        let records = ledger
            .records(run_id)
            .map_err(|error| ReplayError::Ledger { run_id, error })?;
        let revocations = ledger
            .revocations(run_id)
            .map_err(|error| ReplayError::Ledger { run_id, error })?;
        self.replay_with_revocations(&records, &revocations).await
    }
}

/// The decision a person took on an escalated transfer, as the redelivery
/// recorded after it shows it.
fn recorded_decision(record: &LedgerRecord) -> Option<Decision> {
    if !record.redelivery {
        return None;
    }
    match &record.receipt {
        Receipt::Approved { by, edited: false } => Some(Decision::Approve { by: by.clone() }),
        Receipt::Approved { by, edited: true } => Some(Decision::Edit {
            by: by.clone(),
            payload: crate::encode::parse_json(&record.payload_json().ok()?).ok()?,
        }),
        Receipt::Rejected {
            reason: RejectReason::HumanRejected { by, note },
        } => Some(Decision::Reject {
            by: by.clone(),
            note: note.clone(),
        }),
        _ => None,
    }
}

/// Takes `decision` on the suspended run's escalated last transfer again.
fn decide_again<W: Workflow>(
    run: &mut Runtime<'_, W>,
    decision: Decision,
) -> Result<W::State, RunError> {
    let last = run.transcript.len().saturating_sub(1);
    let (format, agent) = match run.transcript.entries.get(last) {
        Some(e) => match W::GRAPH.edges.get(e.edge as usize).map(|i| i.to) {
            Some(crate::spec::Node::Agent(agent)) => (e.format, agent),
            _ => {
                return Err(RunError::Decision(
                    "the escalated transfer is not to an agent".into(),
                ));
            }
        },
        None => return Err(RunError::Decision("the run has no records".into())),
    };
    let bytes = run
        .transcript
        .payload_bytes(last)
        .unwrap_or_default()
        .to_vec();
    run.decide(
        agent,
        &RecordedPayload {
            format,
            bytes: &bytes,
        },
        decision,
    )
}
