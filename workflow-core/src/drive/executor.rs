//! The executor: runs, resumes and decides on a workflow's runs with the
//! root invariants, dependencies, limits and ledger it holds.

use crate::drive::Suspension;
use crate::drive::{Aborted, Completed};
use crate::ledger::Ledger;
use crate::run::{Status, Transcript};
use crate::spec::Budget;
use crate::spec::Decision;
use crate::spec::Node;
use crate::spec::RejectReason;
use crate::spec::RunError;
use crate::spec::{ApproxTokens, Gate, TokenCounter};
use crate::spec::{RecordedPayload, Workflow};

use crate::drive::Session;
use crate::run::{Limits, Runtime};
use crate::spec::SchemaSet;
/// The executor's progress callback.
type ProgressFn = dyn Fn(&crate::run::Progress) + Send + Sync;

/// Runs a workflow: holds the pinned invariants and the dependencies.
pub struct Executor<W: Workflow> {
    pub(crate) root: W::Root,
    pub(crate) deps: W::Deps,
    max_hops: u32,
    ledger: Option<std::sync::Arc<dyn crate::ledger::Ledger>>,
    budget: Option<Budget>,
    deadline: Option<std::time::Duration>,
    gate: Option<std::sync::Arc<dyn Gate>>,
    tokens: std::sync::Arc<dyn TokenCounter>,
    model: Option<std::sync::Arc<dyn crate::llm::Model>>,
    pub(crate) progress: Option<std::sync::Arc<ProgressFn>>,
    holder: String,
    lease_ttl: std::time::Duration,
    mode: crate::spec::Mode,
    revocations: std::sync::Arc<crate::spec::Revocations>,
    /// How large the last run grew: what the next one reserves at once.
    sizes: crate::run::RunSizes,
}

/// How long a run's lease lasts after each write made under it, unless
/// set with `Executor::with_lease_ttl`.
pub const DEFAULT_LEASE_TTL: std::time::Duration = std::time::Duration::from_secs(30);

impl<W: Workflow> Executor<W> {
    /// An executor with the invariants pinned for every run and the
    /// dependencies its tools use. The hop cap defaults to the computed bound.
    pub fn new(root: W::Root, deps: W::Deps) -> Self {
        Executor {
            root,
            deps,
            max_hops: W::GRAPH.max_hops,
            ledger: None,
            budget: None,
            deadline: None,
            gate: None,
            tokens: std::sync::Arc::new(ApproxTokens),
            model: None,
            progress: None,
            holder: crate::ledger::default_holder(),
            lease_ttl: DEFAULT_LEASE_TTL,
            mode: crate::spec::Mode::Enforce,
            revocations: std::sync::Arc::default(),
            sizes: crate::run::RunSizes::default(),
        }
    }

    /// Names who this executor's runs are held by (its leases' holder, what
    /// a second resumer is told): by default the host, the process id and a
    /// number per executor.
    pub fn with_holder(mut self, holder: impl Into<String>) -> Self {
        self.holder = holder.into();
        self
    }

    /// How long a run's lease lasts after each write made under it
    /// ([`DEFAULT_LEASE_TTL`] by default). Every record committed and every
    /// tool call journaled renews it; a turn that writes nothing for longer
    /// may be taken over by another resumer, after which this executor's
    /// writes for the run are refused (`LedgerError::Fenced`).
    pub fn with_lease_ttl(mut self, ttl: std::time::Duration) -> Self {
        self.lease_ttl = ttl;
        self
    }

    /// Who this executor's runs are held by.
    pub fn holder(&self) -> &str {
        &self.holder
    }

    /// Calls `progress` each time an agent's turn starts (after its receipt
    /// was accepted): the workflow, the run, the hop, the agent, the time
    /// since the run started. For progress output on long runs.
    pub fn with_progress(
        mut self,
        progress: impl Fn(&crate::run::Progress) + Send + Sync + 'static,
    ) -> Self {
        self.progress = Some(std::sync::Arc::new(progress));
        self
    }

    /// Gives every run `model`: the one agents ask with
    /// [`Context::generate`](crate::Context::generate) (an HTTP backend, a
    /// [`ScriptedModel`](crate::llm::ScriptedModel) in tests, a
    /// [`RecordedModel`](crate::llm::RecordedModel) to replay a run).
    pub fn with_model(mut self, model: std::sync::Arc<dyn crate::llm::Model>) -> Self {
        self.model = Some(model);
        self
    }

    /// Limits every run: tokens, cost, tool calls. Agents charge with
    /// [`Context::charge`](crate::Context::charge), each tool call counts
    /// one; a transfer arriving with a budget used up is rejected, a turn
    /// that overspends stops the run with `RunError::BudgetExhausted`.
    pub fn with_budget(mut self, budget: Budget) -> Self {
        self.budget = Some(budget);
        self
    }

    /// Gives every run `deadline` from its start: a transfer arriving later
    /// is rejected, and a turn still running then is stopped with
    /// `RunError::DeadlinePassed`.
    pub fn with_deadline(mut self, deadline: std::time::Duration) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// Checks every transfer with `gate` (a Rego policy, an acceptance
    /// hook) after the receiver's own receipt checks; a deny is a rejection
    /// carrying the gate's messages.
    pub fn with_gate(mut self, gate: std::sync::Arc<dyn Gate>) -> Self {
        self.gate = Some(gate);
        self
    }

    /// Counts tokens for handoffs declaring `max_tokens` with `counter`
    /// (the default, [`ApproxTokens`], counts one per four bytes).
    pub fn with_token_counter(mut self, counter: std::sync::Arc<dyn TokenCounter>) -> Self {
        self.tokens = counter;
        self
    }

    pub(crate) fn limits(&self) -> Limits<'_> {
        Limits {
            max_hops: self.max_hops,
            ledger: self.ledger.as_deref(),
            budget: self.budget,
            deadline_ms: self.deadline.map(|d| d.as_millis() as u64),
            gate: self.gate.as_deref(),
            tokens: &*self.tokens,
            model: self.model.as_ref(),
            progress: self.progress.as_deref(),
            holder: &self.holder,
            lease_ttl_ms: u64::try_from(self.lease_ttl.as_millis()).unwrap_or(u64::MAX),
            mode: self.mode,
            revocations: Some(&self.revocations),
            sizes: Some(&self.sizes),
        }
    }

    /// Revokes `lease` (the lease granted by transfer record `seq` of run
    /// `run_id`): the next receipt of that run rejects it
    /// ([`RejectReason::LeaseRevoked`]), whether it is the lease being
    /// delivered or one it derives from (the one its sender worked under,
    /// and so on), and the next tool call made under it is refused
    /// (`ToolErrorKind::OutOfScope`). The rejection and the refusal are
    /// recorded, as every receipt and tool call is. Takes effect at once in
    /// runs under way in this process.
    ///
    /// With a ledger attached the revocation is kept there too
    /// ([`Ledger::append_revocation`](crate::ledger::Ledger::append_revocation)),
    /// so that it survives a restart: [`resume`](Self::resume) applies it
    /// again, and [`replay_run`](Self::replay_run) applies it after the
    /// record it followed. A ledger that cannot keep it is an error (the
    /// revocation still holds in this process).
    pub fn revoke(&self, lease: crate::spec::LeaseId) -> Result<(), crate::spec::LedgerError> {
        self.revocations.revoke(lease);
        let Some(ledger) = self.ledger.as_deref() else {
            return Ok(());
        };
        let after = ledger.head(lease.run_id)?.map(|(seq, _)| seq);
        ledger.append_revocation(&crate::spec::StoredRevocation {
            lease,
            by: self.holder.clone(),
            after,
            at_unix_ms: crate::run::unix_now_ms(),
        })
    }

    /// Shares `revocations` with this executor: a lease revoked in it (by
    /// another executor, or an operator's handle) is revoked for this
    /// executor's runs too.
    pub fn with_revocations(
        mut self,
        revocations: std::sync::Arc<crate::spec::Revocations>,
    ) -> Self {
        self.revocations = revocations;
        self
    }

    /// The executor's registry of revoked leases, to revoke from elsewhere
    /// (a handle kept by an operator, a tool's dependencies).
    pub fn revocations(&self) -> std::sync::Arc<crate::spec::Revocations> {
        self.revocations.clone()
    }

    /// Commits every transfer to `ledger` once its receipt is decided,
    /// before the receiver's body runs (and the `END` transfer before the
    /// run returns). A record the ledger cannot store stops the run with
    /// `RunError::Ledger`: no agent works on an unrecorded transfer.
    pub fn with_ledger(mut self, ledger: std::sync::Arc<dyn crate::ledger::Ledger>) -> Self {
        self.ledger = Some(ledger);
        self
    }

    /// Sets how failed run-time checks are treated: [`Mode::Enforce`]
    /// (the default) stops the transfer; [`Mode::Audit`] records each
    /// failure in the transfer's receipt
    /// ([`Receipt::Audited`](crate::Receipt::Audited)), counts it in the
    /// metrics, and lets the transfer through. What cannot be audited still
    /// stops ([`RejectReason::auditable`]); compile-time checks are never
    /// affected. The mode is written into every record of the run; it is
    /// never read from the environment.
    ///
    /// [`Mode::Enforce`]: crate::Mode::Enforce
    /// [`Mode::Audit`]: crate::Mode::Audit
    pub fn with_mode(mut self, mode: crate::spec::Mode) -> Self {
        self.mode = mode;
        self
    }

    /// The mode in force ([`with_mode`](Self::with_mode)).
    pub fn mode(&self) -> crate::spec::Mode {
        self.mode
    }

    /// Lowers the run-wide hop cap (it can never exceed the computed bound).
    pub fn with_max_hops(mut self, max_hops: u32) -> Self {
        self.max_hops = max_hops.min(W::GRAPH.max_hops);
        self
    }

    /// The pinned invariants.
    pub fn root(&self) -> &W::Root {
        &self.root
    }

    /// The dependencies the tools use (to inspect a fake after a run, say).
    pub fn deps(&self) -> &W::Deps {
        &self.deps
    }

    /// The model attached with [`with_model`](Self::with_model), if any.
    pub fn model(&self) -> Option<&std::sync::Arc<dyn crate::llm::Model>> {
        self.model.as_ref()
    }

    /// The hop cap in force.
    pub fn max_hops(&self) -> u32 {
        self.max_hops
    }

    /// The attached ledger.
    pub(crate) fn ledger(&self) -> Option<&dyn crate::ledger::Ledger> {
        self.ledger.as_deref()
    }

    /// Starts a run to drive step by step.
    pub fn start(&self, input: W::Input) -> Session<'_, W> {
        let mut run = Runtime::fresh(&self.root, &self.deps, self.limits());
        let state = W::start(input, &mut run).map(Some);
        Session { run, state }
    }

    /// Carries on run `run_id` from its records in the attached ledger, after
    /// a crash or a restart: the records are verified; a run that had ended
    /// gives its recorded output (or its rejection) back; a suspended run
    /// says so again (`RunError::Suspended`: decide with
    /// [`decide`](Self::decide)); otherwise the receiver of the last
    /// accepted transfer runs its turn again (agent turns are at least
    /// once; every transfer is still recorded once) — or the sender of a
    /// returned handoff — and the run goes on to its end, its new records
    /// chained to the old.
    pub async fn resume(&self, run_id: u64) -> Result<Completed<W::Output>, Aborted> {
        let fail = |error: String| Aborted {
            error: RunError::Resume(error),
            transcript: Transcript::new(run_id, W::GRAPH),
        };
        let Some(ledger) = self.ledger.as_deref() else {
            return Err(fail(
                "no ledger is attached (`Executor::with_ledger`)".into(),
            ));
        };
        let lease = self.claim(ledger, run_id).map_err(|error| Aborted {
            error,
            transcript: Transcript::new(run_id, W::GRAPH),
        })?;
        let records = self
            .verified_records(ledger, run_id)
            .map_err(|error| Aborted {
                error,
                transcript: Transcript::new(run_id, W::GRAPH),
            })?;
        self.carry_on(ledger, Some(lease), run_id, &records, None)
            .await
    }

    /// Claims run `run_id` for this executor: the run's lease, released
    /// when the returned guard is dropped (the run ended, or the resume
    /// failed before it started).
    fn claim<'a>(
        &'a self,
        ledger: &'a dyn crate::ledger::Ledger,
        run_id: u64,
    ) -> Result<crate::ledger::LeaseGuard<'a>, RunError> {
        let lease = ledger
            .claim(run_id, &self.holder, self.lease_ttl)
            .map_err(RunError::Ledger)?;
        Ok(crate::ledger::LeaseGuard {
            ledger,
            lease: std::sync::Arc::new(lease),
        })
    }

    /// The suspension of run `run_id` in the attached ledger (after a
    /// restart): its records, verified, ending with the escalated transfer.
    pub fn suspension(&self, run_id: u64) -> Result<Suspension, RunError> {
        let ledger = self.ledger.as_deref().ok_or_else(|| {
            RunError::Resume("no ledger is attached (`Executor::with_ledger`)".into())
        })?;
        let records = self.verified_records(ledger, run_id)?;
        Suspension::from_records(records).ok_or_else(|| {
            RunError::Decision(format!("run {run_id} is not waiting for a decision"))
        })
    }

    /// Applies a person's decision to a suspended run and carries it on:
    /// approve (the receiver's turn runs), edit (the new payload is
    /// validated against the receiver's input schema and goes through the
    /// receipt checks again), or reject (the run stops with the person's
    /// reason). With a ledger attached the decision is recorded there (the
    /// suspension must match the ledger's records); without one, the run
    /// carries on from the suspension's records, in memory.
    ///
    /// A decision that cannot be applied (an edit that does not match the
    /// schema, a run that is not suspended) is `RunError::Decision`, and
    /// nothing is recorded: the run stays suspended.
    pub async fn decide(
        &self,
        suspension: &Suspension,
        decision: Decision,
    ) -> Result<Completed<W::Output>, Aborted> {
        let run_id = suspension.run_id();
        let refuse = |error: String| Aborted {
            error: RunError::Decision(error),
            transcript: Transcript::new(run_id, W::GRAPH),
        };
        let memory;
        let mut lease = None;
        let ledger: &dyn crate::ledger::Ledger = match self.ledger.as_deref() {
            Some(ledger) => {
                // One decision at a time: the run is claimed before its
                // records are read.
                lease = Some(self.claim(ledger, run_id).map_err(|error| Aborted {
                    error,
                    transcript: Transcript::new(run_id, W::GRAPH),
                })?);
                // The same run in the same state: the same records, compared
                // by content (a suspension built from a transcript has no
                // trace link, the ledger's records may).
                let stored = ledger.records(run_id).map_err(|e| refuse(e.to_string()))?;
                let held = suspension.records();
                let same = stored.len() == held.len()
                    && stored.iter().zip(&held).all(|(a, b)| {
                        (a.seq, &a.from, &a.to, &a.payload, &a.receipt)
                            == (b.seq, &b.from, &b.to, &b.payload, &b.receipt)
                    });
                if !same {
                    return Err(refuse(format!(
                        "the suspension does not match run {run_id}'s records in the ledger"
                    )));
                }
                ledger
            }
            None => {
                memory = crate::ledger::MemoryLedger::new();
                for r in &suspension.records() {
                    memory.append(r).map_err(|e| refuse(e.to_string()))?;
                }
                &memory
            }
        };
        let records = self
            .verified_records(ledger, run_id)
            .map_err(|error| match error {
                RunError::Resume(why) => refuse(why),
                error => Aborted {
                    error,
                    transcript: Transcript::new(run_id, W::GRAPH),
                },
            })?;
        if !Suspension::ends_escalated(&records) {
            return Err(refuse(format!(
                "run {run_id} is not waiting for a decision"
            )));
        }
        self.carry_on(ledger, lease, run_id, &records, Some(decision))
            .await
    }

    /// The records of `run_id`, verified (the records, and the tool-call
    /// journal against them): `RunError::Journal` for a journal that was
    /// tampered with, `RunError::Resume` for anything else.
    pub(super) fn verified_records(
        &self,
        ledger: &dyn crate::ledger::Ledger,
        run_id: u64,
    ) -> Result<Vec<crate::ledger::LedgerRecord>, RunError> {
        let records = ledger.records(run_id);
        match ledger.verify_run(run_id) {
            Ok(()) => records.map_err(|e| RunError::Resume(e.to_string())),
            Err(crate::ledger::VerifyError::Tampered(crate::ledger::Tampering::Journal(
                tampering,
            ))) => Err(RunError::Journal(tampering)),
            Err(crate::ledger::VerifyError::Tampered(tampering)) => Err(RunError::Resume(format!(
                "run {run_id} does not verify: {tampering}"
            ))),
            Err(e) => Err(RunError::Resume(e.to_string())),
        }
    }

    /// Checks that this executor holds the root run `run_id` was pinned to
    /// (recorded on its first record): `RunError::RootDiffers`, naming
    /// both, when it does not. A run recorded without a root (written before
    /// roots were recorded, or pinned to `()`) is carried on under this
    /// executor's root.
    fn check_root(
        &self,
        run_id: u64,
        records: &[crate::ledger::LedgerRecord],
    ) -> Result<(), RunError> {
        let Some(recorded) = records.first().and_then(|r| r.root.as_deref()) else {
            return Ok(());
        };
        let held = crate::spec::pinned_root(&self.root)
            .map_err(RunError::RootUnrecordable)?
            .unwrap_or_else(|| "null".to_owned());
        if crate::spec::same_root(recorded, &held) {
            return Ok(());
        }
        Err(RunError::RootDiffers {
            run_id,
            recorded: recorded.to_owned(),
            held,
        })
    }

    /// Rebuilds run `run_id` from its verified `records` and carries it on
    /// (with a person's decision when it is suspended).
    pub(super) async fn carry_on<'a>(
        &'a self,
        ledger: &'a dyn crate::ledger::Ledger,
        lease: Option<crate::ledger::LeaseGuard<'a>>,
        run_id: u64,
        records: &[crate::ledger::LedgerRecord],
        decision: Option<Decision>,
    ) -> Result<Completed<W::Output>, Aborted> {
        let fail = |error: String| Aborted {
            error: RunError::Resume(error),
            transcript: Transcript::new(run_id, W::GRAPH),
        };
        self.check_root(run_id, records).map_err(|error| Aborted {
            error,
            transcript: Transcript::new(run_id, W::GRAPH),
        })?;
        let mut run = Runtime::<W>::restored(
            &self.root,
            &self.deps,
            self.limits(),
            ledger,
            lease,
            run_id,
            records,
        )
        .map_err(fail)?;
        // Operators' revocations, kept beside the records: applied again.
        let revoked = ledger
            .revocations(run_id)
            .map_err(|e| fail(e.to_string()))?;
        run.apply_revocations(revoked.iter().map(|r| (r.lease.seq, None)));
        // The calls the turn cut by a crash made: served, not made again.
        let turn_seq = records.len() as u32;
        let journaled = ledger
            .tool_calls(run_id, turn_seq)
            .map_err(|e| fail(e.to_string()))?;
        let Some(last) = records.last() else {
            return Err(fail(format!("run {run_id} has no records")));
        };
        // A run cut inside a fan-out (its branches' records written, its
        // join's not): the branches that ended are kept, the cut ones run
        // again (`run/fork_resume.rs`).
        let lineage_of = |seq: u32| records.get(seq as usize).and_then(|r| r.lineage.as_ref());
        if let Some(lineage) = last.lineage.as_ref().filter(|l| l.inside(&lineage_of)) {
            if decision.is_some() {
                return Err(Aborted {
                    error: RunError::Decision(format!(
                        "run {run_id} is not waiting for a decision"
                    )),
                    transcript: run.transcript,
                });
            }
            let state =
                match run.resume_inside_fork(ledger, records, lineage.outermost(&lineage_of)) {
                    Ok(state) => state,
                    Err(error) => {
                        return Err(Aborted {
                            error,
                            transcript: run.transcript,
                        });
                    }
                };
            // Driven in place: see `run`.
            let mut session = Session {
                run,
                state: Ok(Some(state)),
            };
            let ended = session.drive().await;
            return session.ended(ended);
        }
        // Checked again here, where they are served (a ledger may override
        // `verify_run`): an entry that is not what was journaled is never
        // served, so never recorded.
        if let Err(tampering) =
            crate::ledger::check_turn_journal(run_id, turn_seq, &last.hash, &journaled)
        {
            return Err(Aborted {
                error: RunError::Journal(tampering),
                transcript: run.transcript,
            });
        }
        if !journaled.is_empty() {
            let calls = journaled.into_iter().map(|entry| entry.call).collect();
            run.serve_recorded(crate::ledger::RecordedCalls::resumed(turn_seq, calls));
        }
        let bytes = last.payload_bytes().map_err(|e| fail(e.to_string()))?;
        let payload = RecordedPayload {
            format: last.payload_format,
            bytes: &bytes,
        };
        let entry = run.transcript.entries.last().map(|e| (e.edge, e.status));
        let Some((edge, status)) = entry else {
            return Err(fail(format!("run {run_id} has no records")));
        };
        let info = &W::GRAPH.edges[edge as usize];
        let (from, to) = (W::GRAPH.node_name(info.from), W::GRAPH.node_name(info.to));
        let stopped = |error: RunError, run: Runtime<'_, W>| Aborted {
            error,
            transcript: run.transcript,
        };
        let state = match (status, info.to, decision) {
            (Status::Accepted | Status::Audited, Node::End, None) => {
                return match crate::encode::decode::<W::Output>(payload.format, payload.bytes) {
                    Ok(output) => Ok(Completed {
                        output,
                        transcript: run.transcript,
                    }),
                    Err(e @ crate::spec::PayloadError::Invalid(_)) => {
                        Err(fail(format!("the recorded output does not decode: {e}")))
                    }
                    Err(error) => Err(stopped(
                        RunError::Unreadable {
                            seq: last.seq,
                            error,
                        },
                        run,
                    )),
                };
            }
            (Status::Rejected, Node::Agent(_), None) => {
                let reason = run.transcript.last_rejection().cloned();
                match reason {
                    Some(reason) if run.resume_return(reason.clone()).is_some() => {
                        // A returned handoff: the sender's turn again.
                        match run.return_to_sender() {
                            Ok(state) => state,
                            Err(error) => return Err(stopped(error, run)),
                        }
                    }
                    Some(reason) => {
                        return Err(stopped(RunError::Rejected { from, to, reason }, run));
                    }
                    None => return Err(fail("a rejected record carries no reason".into())),
                }
            }
            (Status::Rejected, _, None) => {
                let Some(reason) = run.transcript.last_rejection().cloned() else {
                    return Err(fail("a rejected record carries no reason".into()));
                };
                return Err(stopped(RunError::Rejected { from, to, reason }, run));
            }
            (Status::TurnFailed, _, None) => {
                let error = match run.transcript.receipt(run.transcript.len() - 1) {
                    Some(crate::spec::Receipt::TurnFailed { error }) => error,
                    _ => return Err(fail("a failed turn's record carries no error".into())),
                };
                return Err(stopped(
                    RunError::Resume(format!("the run stopped when {to}'s turn failed: {error}")),
                    run,
                ));
            }
            (Status::Escalated, Node::Agent(_), None) => {
                let reason = match run.transcript.receipt(run.transcript.len() - 1) {
                    Some(crate::spec::Receipt::Escalated { reason }) => reason,
                    _ => return Err(fail("an escalated record carries no reason".into())),
                };
                return Err(stopped(RunError::Suspended { agent: to, reason }, run));
            }
            (Status::Escalated, Node::Agent(agent), Some(decision)) => {
                match run.decide(agent, &payload, decision) {
                    Ok(state) => state,
                    Err(RunError::Decision(e)) => {
                        return Err(Aborted {
                            error: RunError::Decision(e),
                            transcript: run.transcript,
                        });
                    }
                    Err(error) => return Err(stopped(error, run)),
                }
            }
            (_, _, Some(_)) => {
                return Err(Aborted {
                    error: RunError::Decision(format!(
                        "run {run_id} is not waiting for a decision"
                    )),
                    transcript: run.transcript,
                });
            }
            (s, Node::Agent(agent), None) if s.ran() => {
                // Read back within the same limits it was accepted under: a
                // payload that does not is named as such, not as a schema
                // mismatch.
                if let Err(error) = crate::encode::to_json(payload.format, payload.bytes) {
                    return Err(stopped(
                        RunError::Unreadable {
                            seq: last.seq,
                            error,
                        },
                        run,
                    ));
                }
                if let Err(errors) = validate_recorded::<W>(agent, &payload) {
                    return Err(stopped(
                        RunError::Rejected {
                            from,
                            to,
                            reason: RejectReason::SchemaMismatch { errors },
                        },
                        run,
                    ));
                }
                let state = W::restore(agent, &payload).map_err(fail)?;
                run.next_turn = crate::run::TurnStart::Decided;
                run.resumed_at_join(last.seq as usize, &state);
                state
            }
            _ => {
                return Err(fail(format!(
                    "run {run_id} ends with a transfer whose receipt was never decided"
                )));
            }
        };
        // Driven in place: see `run`.
        let mut session = Session {
            run,
            state: Ok(Some(state)),
        };
        let ended = session.drive().await;
        session.ended(ended)
    }

    /// Runs to the end: the output, or the error that stopped the run; both
    /// with the transcript of every transfer.
    ///
    /// An agent with `timeout_ms` needs a tokio runtime with its time driver
    /// (`#[tokio::main]`, or `Builder::enable_time`/`enable_all`); without
    /// one, tokio panics when the timeout starts.
    pub async fn run(&self, input: W::Input) -> Result<Completed<W::Output>, Aborted> {
        // The runtime built and driven where the run's future holds it,
        // not moved into a `Session` (measured: the session's two copies
        // of a kilobyte cost a run about 400 instructions).
        let mut run = Runtime::<W>::fresh(&self.root, &self.deps, self.limits());
        let ended = crate::drive::session::start_and_drive(input, &mut run).await;
        self.sizes.note(&run.transcript);
        crate::drive::session::run_ended(run.transcript, ended)
    }

    /// Runs to the end or to a suspension, and says which as an
    /// [`Outcome`](crate::Outcome): completed with the output, awaiting a
    /// person's decision (with the suspension to decide on), or stopped with
    /// the error. The same run as [`run`](Self::run), where a suspension is
    /// an `Err`.
    pub async fn run_outcome(&self, input: W::Input) -> crate::drive::Outcome<W::Output> {
        self.run(input).await.into()
    }

    /// The JSON Schemas of every payload, input, output, contract part and record.
    pub fn schemas() -> SchemaSet {
        SchemaSet::of::<W>()
    }

    /// The manifest of the workflow: agents, authorities, tools, edges, bounds.
    pub fn manifest() -> crate::export::Manifest {
        crate::export::Manifest::of_workflow::<W>()
    }

    /// A Mermaid flowchart of the workflow.
    pub fn mermaid() -> String {
        crate::export::mermaid_with_forks(W::GRAPH, W::FORKS)
    }

    /// The workflow's tools as MCP-style definitions (`tools/list`): name,
    /// description, input and output schema, effect annotations.
    pub fn mcp_tools() -> Vec<crate::export::McpTool> {
        crate::export::mcp_tools(W::GRAPH)
    }
}

/// Validates a payload read back from storage against the receiver's
/// input schema (it crossed a serialization boundary).
fn validate_recorded<W: Workflow>(
    agent: u16,
    payload: &RecordedPayload<'_>,
) -> Result<(), Vec<String>> {
    let text =
        crate::encode::to_json(payload.format, payload.bytes).map_err(|e| vec![e.to_string()])?;
    let value = crate::encode::parse_json(&text).map_err(|e| vec![e.to_string()])?;
    crate::export::validate::agent_input::<W>(agent, &value)
}
