//! The state of one run and the checks of every transition: the receipt,
//! the body's result, the record of each transfer, the ledger commit.

use crate::spec::agent_name;
use std::borrow::Cow;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};

use std::sync::Arc;

use serde::Serialize;

use crate::run::receipt::{check_post, check_pre};
use crate::run::{Context, Returned, RunShared};
use crate::run::{Entry, Status, Transcript};
use crate::run::{OwnedTurn, TurnRef, TurnView};
use crate::spec::Then;
use crate::spec::{Agent, Route, Transition, Workflow};
use crate::spec::{Budget, Usage};
use crate::spec::{ContractView, Expiry};
use crate::spec::{Escalation, RejectReason, TurnRecord};
use crate::spec::{Gate, TokenCounter};
use crate::spec::{Node, OnReject};
use crate::spec::{PayloadError, PayloadFormat as Format};
use crate::spec::{Reject, RunError};

/// What an executor sets for each of its runs.
#[derive(Clone, Copy)]
pub(crate) struct Limits<'x> {
    pub(crate) max_hops: u32,
    pub(crate) ledger: Option<&'x dyn crate::ledger::Ledger>,
    pub(crate) budget: Option<Budget>,
    /// The run deadline, in ms after the run started.
    pub(crate) deadline_ms: Option<u64>,
    pub(crate) gate: Option<&'x dyn Gate>,
    pub(crate) tokens: &'x dyn TokenCounter,
    pub(crate) model: Option<&'x Arc<dyn crate::llm::Model>>,
    pub(crate) progress: Option<&'x (dyn Fn(&Progress) + Send + Sync)>,
    /// Who the executor's runs are held by, and for how long each write
    /// renews their lease.
    pub(crate) holder: &'x str,
    pub(crate) lease_ttl_ms: u64,
    /// Whether failed checks stop transfers or are only recorded.
    pub(crate) mode: crate::spec::Mode,
    /// The leases revoked (`Executor::revoke`).
    pub(crate) revocations: Option<&'x Arc<crate::spec::Revocations>>,
    /// How large the executor's last run grew: what a new run reserves.
    pub(crate) sizes: Option<&'x crate::run::transcript::RunSizes>,
}

/// Where a run stands, given to the executor's progress callback
/// (`Executor::with_progress`) each time an agent's turn starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// The workflow.
    pub workflow: &'static str,
    /// The run.
    pub run_id: u64,
    /// Agent turns completed before this one.
    pub hop: u32,
    /// The agent whose turn starts.
    pub agent: &'static str,
    /// Milliseconds since the run started.
    pub elapsed_ms: u64,
}

/// The agents a run counts its per-agent figures for without allocating.
pub(super) const INLINE_AGENTS: usize = 8;

/// A count for each agent of the graph, by agent index.
pub(super) type PerAgent = smallvec::SmallVec<[u32; INLINE_AGENTS]>;

/// The hash before a run's first commit (none), shared by every run
/// rather than allocated for each.
fn no_hash() -> Arc<str> {
    static EMPTY: std::sync::OnceLock<Arc<str>> = std::sync::OnceLock::new();
    EMPTY.get_or_init(|| Arc::from("")).clone()
}

/// The state of one run as the executor keeps it.
pub struct Runtime<'x, W: Workflow> {
    pub(super) root: &'x W::Root,
    pub(super) deps: &'x W::Deps,
    pub(crate) hops: u32,
    pub(super) max_hops: u32,
    pub(super) clock: &'static quanta::Clock,
    pub(super) started: u64,
    pub(crate) transcript: Transcript,
    pub(super) ledger: Option<&'x dyn crate::ledger::Ledger>,
    pub(super) limits: Limits<'x>,
    pub(super) shared: Arc<RunShared>,
    /// What the run spent before the current turn.
    pub(crate) spent: Usage,
    /// The questions the agent whose turn runs received (to check that its
    /// handoff acknowledges each).
    pub(super) open: Vec<String>,
    /// The entry the current turn works on.
    pub(super) turn_input: usize,
    /// Handoffs each agent has returned to their senders (by agent index;
    /// held inline for a graph of up to [`INLINE_AGENTS`] agents: one
    /// allocation a run less each).
    pub(super) returns: PerAgent,
    /// Transfers each agent has made (a person's edit of one not counted):
    /// an agent with none has no earlier turns to show its context.
    pub(super) sent_by: PerAgent,
    /// Transfers recorded that an agent turn made (linked to it: see
    /// `Transcript::link`).
    pub(super) linked_turns: u32,
    /// The payload of the last handoff returned to its sender, by edge: the
    /// same bytes sent again are rejected.
    pub(super) returned_payload: Option<(u16, Vec<u8>)>,
    /// How the next agent turn starts.
    pub(crate) next_turn: TurnStart,
    /// The current turn as its context sees it (its scope: the handoff's
    /// it works under), lent to the context for the turn.
    pub(super) turn: TurnView<'x>,
    /// The hash of the last record committed to the ledger.
    /// (shared with the turn's context, whose journal entries bind to it).
    pub(super) prev_hash: Arc<str>,
    /// Microseconds the run had run before it was resumed.
    pub(super) at_offset_us: u64,
    /// The run's lease while the run is worked on (with a ledger): every
    /// commit is made under it; released when the runtime is dropped.
    pub(super) lease: Option<crate::ledger::LeaseGuard<'x>>,
    /// Why the root invariants cannot be recorded (they do not serialize):
    /// the first commit to a ledger fails with it.
    root_error: Option<String>,
    /// Audit mode: the failed checks found so far on the last transfer,
    /// recorded in its receipt when it is let through.
    pub(super) audited: Vec<RejectReason>,
    /// The questions the branches of the last fan-out left open, for its
    /// join's turn to carry forward (the join's input is not a handoff).
    pub(super) joined_open: Vec<String>,
    /// The disagreement among the verdicts of the last fan-out's branches,
    /// for its join's turn (`run/verdicts.rs`).
    pub(super) joined_dissent: Option<Box<crate::spec::Disagreement>>,
    /// The disagreement the current turn's handoff must carry forward.
    pub(super) dissent: Option<Box<crate::spec::Disagreement>>,
    /// A run resumed inside a fan-out: the records its branches already
    /// have, taken by the fan-out's `fork` (`run/fork_resume.rs`).
    pub(super) resume_fork: Option<Box<crate::run::ForkResume>>,
}

/// How the next agent turn starts: the four ways a turn begins, each with
/// what it carries.
pub(crate) enum TurnStart {
    /// A transfer was recorded and waits for its receipt (a handoff, or the
    /// workflow input): the receipt checks decide.
    Delivery,
    /// A person edited an escalated payload: it is delivered again and goes
    /// through the receipt checks again, and the receipt records who
    /// approved it.
    Edited {
        /// Who decided.
        by: String,
    },
    /// The sender's turn again, on its accepted input, to handle the
    /// rejection of its handoff (`on_reject = sender`): no receipt.
    /// (Boxed: rare, and the run's future holds the runtime.)
    Return(Box<Returned>),
    /// The last transfer's receipt was decided and committed before: a run
    /// resumed after a crash, or a transfer a person approved as it was.
    /// The receiver's turn runs without a second receipt.
    Decided,
}

static RUN_IDS: AtomicU64 = AtomicU64::new(0);

/// A run id unique across processes sharing a ledger: seeded once from the
/// clock and the process id, then counted up.
fn next_run_id() -> u64 {
    let id = RUN_IDS.fetch_add(1, Ordering::Relaxed);
    if id != 0 {
        return id;
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64);
    let seed = (now << 12) ^ u64::from(std::process::id());
    // Whoever loses the race takes the next number of the winner's seed.
    match RUN_IDS.compare_exchange(1, seed.max(2), Ordering::Relaxed, Ordering::Relaxed) {
        Ok(_) => seed.max(2) - 1,
        Err(_) => RUN_IDS.fetch_add(1, Ordering::Relaxed),
    }
}

/// The clock records are timed with: calibrated once, then read from the
/// CPU's counter (a few ns, against ~25 ns for `Instant::now`).
fn clock() -> &'static quanta::Clock {
    static CLOCK: std::sync::OnceLock<quanta::Clock> = std::sync::OnceLock::new();
    CLOCK.get_or_init(quanta::Clock::new)
}

impl<'x, W: Workflow> Runtime<'x, W> {
    pub(crate) fn new(root: &'x W::Root, deps: &'x W::Deps, limits: Limits<'x>) -> Self {
        Runtime::numbered(root, deps, limits, next_run_id())
    }

    /// A new run with id `run_id` (one submitted to a work queue, or one
    /// carried on from its records).
    pub(crate) fn numbered(
        root: &'x W::Root,
        deps: &'x W::Deps,
        limits: Limits<'x>,
        run_id: u64,
    ) -> Self {
        // Room for a run as large as the executor's last, at once.
        let last = limits.sizes.and_then(|s| s.last());
        Runtime {
            root,
            deps,
            hops: 0,
            max_hops: limits.max_hops,
            clock: clock(),
            started: clock().raw(),
            transcript: Transcript::sized(run_id, W::GRAPH, last),
            ledger: limits.ledger,
            limits,
            shared: Arc::new(RunShared {
                run_id,
                max_hops: limits.max_hops,
                deadline: limits
                    .deadline_ms
                    .map(|ms| std::time::Instant::now() + std::time::Duration::from_millis(ms)),
                mode: limits.mode,
                budget: limits.budget,
                model: limits.model.cloned(),
                revocations: limits.revocations.cloned(),
                edge_uses: W::GRAPH
                    .edges
                    .iter()
                    .map(|_| std::sync::atomic::AtomicU32::new(0))
                    .collect(),
                ..RunShared::default()
            }),
            spent: Usage::default(),
            open: Vec::new(),
            turn_input: 0,
            returns: smallvec::smallvec![0; W::GRAPH.agents.len()],
            sent_by: smallvec::smallvec![0; W::GRAPH.agents.len()],
            linked_turns: 0,
            returned_payload: None,
            next_turn: TurnStart::Delivery,
            turn: TurnView::default(),
            prev_hash: no_hash(),
            at_offset_us: 0,
            lease: None,
            root_error: None,
            audited: Vec::new(),
            joined_open: Vec::new(),
            joined_dissent: None,
            dissent: None,
            resume_fork: None,
        }
    }

    /// Pins the run's root: the transcript carries the root invariants' JSON
    /// for the run's first record (its header, covered by the hash chain).
    pub(crate) fn pin_root(&mut self) {
        match crate::spec::pinned_root(self.root) {
            Ok(root) => self.transcript.root = root,
            Err(e) => self.root_error = Some(e),
        }
    }

    /// A fresh run: the lease it holds from its first record on, when it
    /// has a ledger.
    pub(crate) fn fresh(root: &'x W::Root, deps: &'x W::Deps, limits: Limits<'x>) -> Self {
        let mut run = Runtime::new(root, deps, limits);
        run.pin_root();
        if let Some(ledger) = limits.ledger {
            let lease = crate::ledger::Lease::fresh(
                run.transcript.run_id,
                limits.holder,
                limits.lease_ttl_ms,
            );
            run.hold(crate::ledger::LeaseGuard {
                ledger,
                lease: Arc::new(lease),
            });
        }
        run
    }

    /// Works on the run under `lease`: its records and journal entries are
    /// written under it.
    pub(crate) fn hold(&mut self, lease: crate::ledger::LeaseGuard<'x>) {
        let shared = Arc::get_mut(&mut self.shared);
        match shared {
            Some(shared) => shared.lease = Some(lease.lease.clone()),
            None => self.renew_shared(None, Some(lease.lease.clone())),
        }
        self.lease = Some(lease);
    }

    /// A runtime carrying on run `run_id` after its ledger `records` (verified).
    pub(crate) fn restored(
        root: &'x W::Root,
        deps: &'x W::Deps,
        limits: Limits<'x>,
        ledger: &'x dyn crate::ledger::Ledger,
        lease: Option<crate::ledger::LeaseGuard<'x>>,
        run_id: u64,
        records: &[crate::ledger::LedgerRecord],
    ) -> Result<Self, String> {
        let mut run = Runtime::numbered(
            root,
            deps,
            Limits {
                ledger: Some(ledger),
                ..limits
            },
            run_id,
        );
        // The root the run was pinned to stays in its header (the caller
        // checked that this executor holds the same).
        run.transcript.root = records.first().and_then(|r| r.root.clone());
        if let Some(lease) = lease {
            run.hold(lease);
        }
        for r in records {
            let from = r.from.to_string();
            let to = r.to.to_string();
            let edge = W::GRAPH
                .edges
                .iter()
                .position(|e| W::GRAPH.node_name(e.from) == from && W::GRAPH.node_name(e.to) == to)
                .ok_or_else(|| {
                    format!(
                        "record #{} names an edge {from} -> {to} the workflow does not have",
                        r.seq
                    )
                })?;
            let bytes = r.payload_bytes().map_err(|e| e.to_string())?;
            let t = &mut run.transcript;
            let start = t.bytes.len();
            t.bytes.extend_from_slice(&bytes);
            crate::run::payloads::push_grown(
                &mut t.entries,
                Entry {
                    hop: r.hop,
                    edge: edge as u16,
                    status: Status::Pending,
                    redelivery: r.redelivery,
                    format: r.payload_format,
                    start: u32::try_from(start).map_err(|_| "records exceed 4 GiB".to_owned())?,
                    end: u32::try_from(t.bytes.len())
                        .map_err(|_| "records exceed 4 GiB".to_owned())?,
                    link: crate::run::earlier::NONE,
                    at_us: r.at_us,
                },
            );
            let i = t.entries.len() - 1;
            if let Some(scope) = &r.sender_scope {
                let authority = crate::run::lease_book::authority_named::<W>(&scope.authority)
                    .ok_or_else(|| {
                        format!(
                            "record #{} names a sender scope over authority `{}`, which the workflow does not have",
                            r.seq, scope.authority
                        )
                    })?;
                t.push_sender_scope(i as u32, authority, scope.expires);
            }
            t.note(i, r.receipt.clone());
            if let Some(lineage) = &r.lineage {
                t.lineage.push((i as u32, lineage.clone()));
            }
            // A branch's outcome is collected for its join, not a turn of
            // the join's agent: the join's own transfer is.
            let outcome = matches!(r.lineage, Some(crate::spec::Lineage::Outcome { .. }));
            if let Some(turn) = &r.turn {
                t.turns.push((i as u32, turn.clone()));
                run.spent.add(&turn.usage);
            }
            let status = t.entries[i].status;
            let info = &W::GRAPH.edges[edge];
            let overflow = |what: &str| format!("record #{}: the run's {what} overflows", r.seq);
            if let Node::Agent(from) = info.from
                && !r.redelivery
                && let Some(n) = run.sent_by.get_mut(from as usize)
            {
                *n = n.checked_add(1).ok_or_else(|| overflow("transfer count"))?;
            }
            if info.bound.is_some() && !r.redelivery {
                let uses = &run.shared.edge_uses[edge];
                let next = uses
                    .load(Ordering::Relaxed)
                    .checked_add(1)
                    .ok_or_else(|| overflow("edge count"))?;
                uses.store(next, Ordering::Relaxed);
            }
            if let Node::Agent(to) = info.to {
                if status.ran() && !outcome {
                    run.hops = run
                        .hops
                        .checked_add(1)
                        .ok_or_else(|| overflow("hop count"))?;
                    run.turn_input = i;
                }
                if status == Status::Rejected
                    && matches!(agent_on_reject::<W>(to), OnReject::Sender { .. })
                    && let Some(n) = run.returns.get_mut(to as usize)
                {
                    *n = n.checked_add(1).ok_or_else(|| overflow("return count"))?;
                }
            }
            run.prev_hash = Arc::from(r.hash.as_str());
            run.at_offset_us = r.at_us;
        }
        run.linked_turns = run.transcript.link_turns();
        // The time the run had run before is known now: the shared state
        // takes the deadline it leaves (nothing else holds it yet, but a new
        // one is made rather than assumed).
        let recorded = None;
        let lease = run.lease.as_ref().map(|held| held.lease.clone());
        run.renew_shared(recorded, lease);
        run.restore_revocations();
        Ok(run)
    }

    /// Commits the last record to the ledger, if there is one: called once
    /// its receipt is decided, before the receiver's body runs.
    ///
    /// Without a ledger, nothing to do: inlined so that a run in memory
    /// pays one test, not a call.
    #[inline]
    pub(super) fn commit_last(&mut self) -> Result<(), RunError> {
        match self.ledger {
            None => Ok(()),
            Some(ledger) => self.commit_last_to(ledger),
        }
    }

    /// [`commit_last`](Self::commit_last) to `ledger`.
    #[inline(never)]
    fn commit_last_to(&mut self, ledger: &'x dyn crate::ledger::Ledger) -> Result<(), RunError> {
        let i = self.transcript.len().saturating_sub(1);
        let prev = if i == 0 {
            if let Some(error) = &self.root_error {
                return Err(RunError::RootUnrecordable(error.clone()));
            }
            crate::ledger::GENESIS
        } else {
            &self.prev_hash
        };
        let record = self
            .transcript
            .ledger_record(i, prev)
            .map_err(|e| RunError::Ledger(crate::spec::LedgerError::Corrupt(e.to_string())))?;
        match &self.lease {
            Some(held) => ledger.append_leased(&record, &held.lease),
            None => ledger.append(&record),
        }
        .map_err(RunError::Ledger)?;
        self.prev_hash = Arc::from(record.hash);
        Ok(())
    }

    /// The transfers recorded so far.
    pub fn transcript(&self) -> &Transcript {
        &self.transcript
    }

    /// Agent turns completed so far.
    pub fn hops(&self) -> u32 {
        self.hops
    }

    /// What a context of agent `A` on the last transfer, at the current
    /// hop, under `scope`, knows of its turn and the run, owned so that it
    /// may be kept while the runtime changes (a fan-out branch's).
    pub(super) fn owned_turn<A: Agent<W>>(
        &mut self,
        scope: Option<(&'static str, Expiry)>,
    ) -> OwnedTurn<'x> {
        let turn = self.view_of::<A>(scope);
        let payloads = (turn.earlier_upto > 0).then(|| self.transcript.bytes.share());
        // The branch reads the run's transfers from the shared copy, brought
        // up to date with everything recorded before its turn.
        self.shared.transfers().catch_up(&self.transcript);
        OwnedTurn {
            turn,
            shared: self.shared.clone(),
            payloads,
        }
    }

    /// What agent `A`'s context knows of a turn on the last transfer, at
    /// the current hop, under `scope`, its tool calls journaled to the
    /// ledger bound to the last committed record.
    fn view_of<A: Agent<W>>(&self, scope: Option<(&'static str, Expiry)>) -> TurnView<'x> {
        let next = self.transcript.len() as u32;
        TurnView {
            hop: self.hops,
            lease_seq: next.saturating_sub(1),
            turn_seq: next,
            earlier_upto: self.earlier_upto::<A>(),
            scope,
            journal: self.journal(),
        }
    }

    /// Where a turn's tool calls are journaled: the run's ledger, bound to
    /// the last committed record (`None` without a ledger).
    fn journal(&self) -> Option<crate::run::context::Journal<'x>> {
        self.ledger.map(|ledger| crate::run::context::Journal {
            ledger,
            anchor: self.prev_hash.clone(),
        })
    }

    /// Readies the current turn's view for agent `A` (by
    /// [`receive`](Self::receive), before its pre-conditions): on the last
    /// transfer, at the current hop, under the turn's scope.
    // Field by field, the scope kept: the view written anew from
    // `view_of` counted 9 instructions a transition more.
    #[inline]
    fn ready_turn<A: Agent<W>>(&mut self) {
        let next = self.transcript.len() as u32;
        self.turn.hop = self.hops;
        self.turn.lease_seq = next.saturating_sub(1);
        self.turn.turn_seq = next;
        self.turn.earlier_upto = self.earlier_upto::<A>();
        self.bind_journal();
    }

    /// Binds the turn's journal (where its tool calls are journaled) to
    /// the run's last commit. Without a ledger there is none, and the turn
    /// holds none from its start: nothing to write (measured: the
    /// assignment cost a transition about 10 instructions).
    #[inline]
    fn bind_journal(&mut self) {
        if self.ledger.is_some() {
            self.turn.journal = self.journal();
        }
    }

    /// The context of agent `A`'s turn, once [`receive`](Self::receive)
    /// accepted its input: it borrows the run's state for the turn (nothing
    /// counted in or out), which the runtime does not change until the
    /// turn's body returns to [`deliver_turn`](Self::deliver_turn).
    #[doc(hidden)] // for generated turns; by hand, `turn` does it all
    #[inline]
    pub fn turn_context<A: Agent<W>>(&self) -> Context<'_, W, A> {
        let run = TurnRef::Lent {
            turn: &self.turn,
            shared: &self.shared,
            transcript: &self.transcript,
        };
        Context::new(self.root, self.deps, run)
    }

    /// When the run's deadline passes, as an instant of this process (`None`:
    /// no deadline).
    pub(super) fn deadline(&self) -> Option<std::time::Instant> {
        self.limits.deadline_ms.map(|after_ms| {
            let left = after_ms.saturating_sub(self.elapsed_ms());
            std::time::Instant::now() + std::time::Duration::from_millis(left)
        })
    }

    /// Serves `calls` (recorded before) instead of calling the tools again:
    /// set before the run's next turn.
    pub(crate) fn serve_recorded(&mut self, calls: crate::ledger::RecordedCalls) {
        let lease = self.lease.as_ref().map(|held| held.lease.clone());
        self.renew_shared(Some(calls), lease);
    }

    /// The run's shared state made anew (a context of an earlier turn may
    /// still hold the old one) with `recorded` calls and `lease`: the
    /// run's counts and the branches' copy of its transfers carried over,
    /// the turn's log empty.
    fn renew_shared(
        &mut self,
        recorded: Option<crate::ledger::RecordedCalls>,
        lease: Option<Arc<crate::ledger::Lease>>,
    ) {
        let edge_uses = self
            .shared
            .edge_uses
            .iter()
            .map(|u| std::sync::atomic::AtomicU32::new(u.load(Ordering::Relaxed)))
            .collect();
        // The copy, if a branch made one (none made for nothing).
        let transfers = self.shared.transfers.clone();
        let leases = std::mem::take(&mut *self.shared.leases());
        let leases_used = self.shared.leases_used.load(Ordering::Acquire);
        self.shared = Arc::new(RunShared {
            run_id: self.transcript.run_id,
            max_hops: self.max_hops,
            deadline: self.deadline(),
            mode: self.limits.mode,
            budget: self.limits.budget,
            model: self.limits.model.cloned(),
            // The operator's registry: a revocation made while the run
            // goes on (resumed, or served recorded calls) still applies.
            revocations: self.limits.revocations.cloned(),
            recorded,
            lease,
            edge_uses,
            transfers,
            leases: std::sync::Mutex::new(leases),
            leases_used: std::sync::atomic::AtomicBool::new(leases_used),
            ..RunShared::default()
        });
    }

    /// Records the transfer of `payload` over edge `edge` to an agent, with
    /// its receipt pending; `contract` is the payload's contract (`None`
    /// for the workflow input). Rejects it if the edge's loop bound is used
    /// up or the payload drops an uncertainty item the sender received.
    pub fn handoff<P: Serialize>(
        &mut self,
        edge: u16,
        payload: &P,
        contract: Option<ContractView<'_>>,
    ) -> Result<(), RunError> {
        self.handoff_written(edge, payload, |_| contract, crate::encode::through_serde)
    }

    /// [`handoff`](Self::handoff) of agent `A`'s input, written by its
    /// direct writer if it has one ([`Agent::WRITE_INPUT`]), with `A`'s
    /// view of its contract.
    #[doc(hidden)]
    #[inline]
    pub fn handoff_as<A: Agent<W>>(&mut self, edge: u16, payload: &A::Input) -> Result<(), RunError>
    where
        A::Input: Serialize,
    {
        self.handoff_written(edge, payload, A::contract, input_writer::<W, A>())
    }

    /// [`handoff`](Self::handoff), the payload written by `write`; its
    /// contract (`contract` of the payload) looked at only when the sender
    /// received an open question or a disagreement to carry (nearly never:
    /// not built for nothing).
    #[inline]
    fn handoff_written<'p, P: Serialize>(
        &mut self,
        edge: u16,
        payload: &'p P,
        contract: impl FnOnce(&'p P) -> Option<ContractView<'p>>,
        write: crate::encode::Writer<P>,
    ) -> Result<(), RunError> {
        let info = self.edge(edge, Node::End, false)?;
        if let Some(reason) = self.record_with(edge, info, payload, write, Status::Pending)? {
            self.verdict(reason)?;
        }
        if let Some(reason) = self.take_edge(edge, info) {
            return Err(self.reject_last(reason));
        }
        // Nearly always nothing open and no disagreement: tested here
        // rather than by a call each.
        if self.open.is_empty() && self.dissent.is_none() {
            return Ok(());
        }
        let contract = contract(payload);
        if !self.open.is_empty()
            && let Some(question) = self.dropped_question(contract.as_ref())
        {
            self.verdict(RejectReason::UncertaintyDropped { question })?;
        }
        if self.dissent.is_some()
            && let Some(reason) = self.dropped_verdict(contract.as_ref(), false)
        {
            self.verdict(reason)?;
        }
        Ok(())
    }

    /// Counts one more use of edge `edge` (`info`): past its loop bound, the
    /// reason its transfer is refused.
    #[inline]
    pub(super) fn take_edge(
        &self,
        edge: u16,
        info: &crate::spec::EdgeInfo,
    ) -> Option<RejectReason> {
        let bound = info.bound?;
        let uses = self
            .shared
            .edge_uses
            .get(edge as usize)
            .map_or(u32::MAX, |u| {
                u.fetch_add(1, Ordering::Relaxed).saturating_add(1)
            });
        // Not `then_some`: the reason it builds whatever the test is
        // dropped by a call when it is not needed (nearly always).
        if uses > bound {
            Some(RejectReason::LoopBound { bound })
        } else {
            None
        }
    }

    /// Records the transfer of the workflow output over edge `edge` to
    /// `END`; `contract` is the output's contract if it is a handoff type.
    /// The transfer-wide checks (invariants, forbidden fields, the gate)
    /// and the uncertainty rule apply to it as to any transfer.
    pub fn end<P: Serialize>(
        &mut self,
        edge: u16,
        output: &P,
        contract: Option<ContractView<'_>>,
    ) -> Result<(), RunError> {
        let info = self.edge(edge, Node::End, true)?;
        if let Some(reason) = self.record(edge, info, output, Status::Pending)? {
            self.verdict(reason)?;
        }
        let dropped_verdict = self.dropped_verdict(contract.as_ref(), true);
        if contract.is_none() && !self.open.is_empty() {
            // An output that is not a handoff cannot carry the questions:
            // they go to the caller with it, recorded with the last turn.
            let unresolved = std::mem::take(&mut self.open);
            let at = (self.transcript.len() - 1) as u32;
            let sender = agent_name::<W>(match info.from {
                Node::Agent(a) => a,
                _ => u16::MAX,
            });
            match self.transcript.turns.iter_mut().find(|(i, _)| *i == at) {
                Some((_, turn)) => turn.unresolved = unresolved,
                None => self.transcript.turns.push((
                    at,
                    TurnRecord {
                        agent: Cow::Borrowed(sender),
                        input_seq: self.turn_input as u32,
                        tool_calls: Vec::new(),
                        model_calls: Vec::new(),
                        usage: Usage::default(),
                        unresolved,
                        leases: Vec::new(),
                    },
                )),
            }
        }
        if let Some(question) = self.dropped_question(contract.as_ref()) {
            self.verdict(RejectReason::UncertaintyDropped { question })?;
        }
        if let Some(reason) = dropped_verdict {
            self.verdict(reason)?;
        }
        if self.limits.mode.is_enforce() {
            if let Some(reason) = self.check_transfer(contract.as_ref()) {
                return Err(self.reject_last(reason));
            }
        } else {
            for reason in self.transfer_verdicts(contract.as_ref(), true) {
                self.verdict(reason)?;
            }
        }
        self.accept_last();
        self.commit_last()
    }

    /// A failed check on the last transfer: in enforce mode (or for a
    /// reason that cannot be audited) the transfer is rejected and the
    /// error returned; in audit mode the reason is kept for the transfer's
    /// receipt and the transfer goes on.
    pub(super) fn verdict(&mut self, reason: RejectReason) -> Result<(), RunError> {
        if self.limits.mode == crate::spec::Mode::Audit && reason.auditable() {
            crate::observe::telemetry::audit_verdict::<W>(
                self.transcript.entries.last().map(|e| e.edge),
                &reason,
            );
            self.audited.push(reason);
            return Ok(());
        }
        Err(self.reject_last(reason))
    }

    /// Marks the last transfer accepted, or audited with the failed checks
    /// audit mode let through.
    #[inline(always)]
    pub(super) fn accept_last(&mut self) {
        let i = self.transcript.len().saturating_sub(1);
        if self.audited.is_empty() {
            if let Some(last) = self.transcript.entries.last_mut() {
                last.status = Status::Accepted;
            }
        } else {
            let reasons = std::mem::take(&mut self.audited);
            self.transcript
                .note(i, crate::spec::Receipt::Audited { reasons });
        }
    }

    /// The edge `edge`, checked to exist and to lead to `END` (`to_end`) or
    /// not: generated code always passes a right index; a hand-written
    /// workflow that does not gets an error, never a panic.
    pub(super) fn edge(
        &self,
        edge: u16,
        end: Node,
        to_end: bool,
    ) -> Result<&'static crate::spec::EdgeInfo, RunError> {
        match W::GRAPH.edges.get(edge as usize) {
            Some(info) if (info.to == end) == to_end => Ok(info),
            _ => Err(RunError::Protocol(format!(
                "edge {edge} is not an edge of workflow `{}` to {}",
                W::GRAPH.name,
                if to_end { "END" } else { "an agent" }
            ))),
        }
    }

    /// Records the transfer of `payload`; a payload the encoder refuses
    /// (too deep, a non-finite number) is recorded as `null` and its
    /// reason returned, for the caller to reject it at its first receipt.
    pub(super) fn record<P: Serialize>(
        &mut self,
        edge: u16,
        info: &'static crate::spec::EdgeInfo,
        payload: &P,
        status: Status,
    ) -> Result<Option<RejectReason>, RunError> {
        self.record_with(edge, info, payload, crate::encode::through_serde, status)
    }

    /// [`record`](Self::record) of agent `A`'s input, written by its
    /// direct writer if it has one.
    pub(super) fn record_input<A: Agent<W>>(
        &mut self,
        edge: u16,
        info: &'static crate::spec::EdgeInfo,
        input: &A::Input,
        status: Status,
    ) -> Result<Option<RejectReason>, RunError>
    where
        A::Input: Serialize,
    {
        self.record_with(edge, info, input, input_writer::<W, A>(), status)
    }

    /// [`record`](Self::record), the payload written by `write`.
    fn record_with<P: Serialize>(
        &mut self,
        edge: u16,
        info: &'static crate::spec::EdgeInfo,
        payload: &P,
        write: crate::encode::Writer<P>,
        status: Status,
    ) -> Result<Option<RejectReason>, RunError> {
        let t = &mut self.transcript;
        let start = t.bytes.len();
        let (format, refused) = match crate::encode::encode_with(t.bytes.tail(), payload, write) {
            Ok(format) => (format, None),
            Err(PayloadError::TooDeep { limit }) => {
                t.bytes.extend_from_slice(b"null");
                (Format::Json, Some(RejectReason::TooDeep { limit }))
            }
            Err(PayloadError::NonFinite { path, value }) => {
                t.bytes.extend_from_slice(b"null");
                (Format::Json, Some(RejectReason::NonFinite { path, value }))
            }
            Err(error) => {
                return Err(RunError::Encode {
                    from: W::GRAPH.node_name(info.from),
                    to: W::GRAPH.node_name(info.to),
                    error: error.to_string(),
                });
            }
        };
        // Offsets are u32 to keep entries small: a run's records are capped
        // at 4 GiB of payload bytes rather than silently wrapped.
        let at_us = match self.now_us() {
            Ok(at_us) => at_us,
            Err(e) => {
                self.transcript.bytes.truncate(start);
                return Err(e);
            }
        };
        let t = &mut self.transcript;
        let (Ok(start), Ok(end)) = (u32::try_from(start), u32::try_from(t.bytes.len())) else {
            t.bytes.truncate(start);
            return Err(RunError::Encode {
                from: W::GRAPH.node_name(info.from),
                to: W::GRAPH.node_name(info.to),
                error: "the run's records exceed 4 GiB of payload bytes".into(),
            });
        };
        if let Node::Agent(from) = info.from
            && let Some(n) = self.sent_by.get_mut(from as usize)
        {
            *n += 1;
        }
        // Verdicts belong to one transfer; the mode goes into every record.
        self.audited.clear();
        t.mode = self.limits.mode;
        // What the sender worked under, for the receipt of the lease it
        // grants (now, or after a resume), and for its renewals.
        let sender_scope = match info.from {
            Node::Agent(_) => self.turn.scope,
            _ => None,
        };
        if let Some((authority, expires)) = sender_scope {
            t.push_sender_scope(t.entries.len() as u32, authority, expires);
        }
        crate::run::payloads::push_grown(
            &mut t.entries,
            Entry {
                hop: self.hops,
                edge,
                status,
                redelivery: false,
                format,
                start,
                end,
                link: crate::run::earlier::NONE,
                at_us,
            },
        );
        self.link_sent(info.from);
        Ok(refused)
    }

    /// Marks the last transfer rejected and returns the matching error,
    /// routed as the receiver declares: the run stops (`abort`), is
    /// suspended for a person (`escalate`), or the handoff goes back to its
    /// sender (`sender`).
    fn reject_last(&mut self, reason: RejectReason) -> RunError {
        let i = self.transcript.len().saturating_sub(1);
        let Some(entry) = self.transcript.entries.last() else {
            return RunError::Protocol("a receipt was decided with no transfer recorded".into());
        };
        let edge_index = entry.edge;
        let Some(edge) = W::GRAPH.edges.get(edge_index as usize) else {
            return RunError::Protocol("a receipt was decided for an unknown edge".into());
        };
        let (from, to) = (W::GRAPH.node_name(edge.from), W::GRAPH.node_name(edge.to));
        let policy = match edge.to {
            Node::Agent(a) if !matches!(reason, RejectReason::HumanRejected { .. }) => {
                agent_on_reject::<W>(a)
            }
            _ => OnReject::Abort,
        };
        let error = match (policy, edge.from, edge.to) {
            (OnReject::Escalate, _, _) if returnable(&reason) => {
                let reason = Escalation::Rejected { reason };
                self.transcript.note(
                    i,
                    crate::spec::Receipt::Escalated {
                        reason: reason.clone(),
                    },
                );
                RunError::Suspended { agent: to, reason }
            }
            (OnReject::Sender { max }, Node::Agent(_), Node::Agent(receiver))
                if returnable(&reason) =>
            {
                self.transcript.note(
                    i,
                    crate::spec::Receipt::Rejected {
                        reason: reason.clone(),
                    },
                );
                let times = self.returns.get(receiver as usize).copied().unwrap_or(0) + 1;
                if let Some(n) = self.returns.get_mut(receiver as usize) {
                    *n = times;
                }
                if times > max {
                    RunError::Rejected { from, to, reason }
                } else {
                    let bytes = self
                        .transcript
                        .payload_bytes(i)
                        .unwrap_or_default()
                        .to_vec();
                    self.returned_payload = Some((edge_index, bytes));
                    self.next_turn = TurnStart::Return(Box::new(Returned {
                        by: to,
                        reason: reason.clone(),
                        times,
                    }));
                    // The run goes on with the sender's turn
                    // (`return_to_sender`); to the turn, a rejection.
                    RunError::Rejected { from, to, reason }
                }
            }
            _ => {
                self.transcript.note(
                    i,
                    crate::spec::Receipt::Rejected {
                        reason: reason.clone(),
                    },
                );
                RunError::Rejected { from, to, reason }
            }
        };
        self.receipt_decided();
        // A rejection the ledger could not keep is reported as that, and
        // the run stops there.
        match self.commit_last() {
            Ok(()) => error,
            Err(ledger) => {
                self.next_turn = TurnStart::Delivery;
                ledger
            }
        }
    }

    /// Whether the last rejection was routed back to its sender
    /// (`on_reject = sender`): the run goes on with
    /// [`return_to_sender`](Self::return_to_sender), not with the error.
    pub(crate) fn is_returning(&self) -> bool {
        matches!(self.next_turn, TurnStart::Return(_))
    }

    /// What a run goes on with after a turn ended in `error`: the state in
    /// which the sender runs again when the error is a rejection routed back
    /// to it (`on_reject = sender`), else the error itself. The step of
    /// [`Workflow::run_to_end`](crate::Workflow::run_to_end)'s loop after an
    /// error, for the loops generated code writes.
    #[doc(hidden)]
    pub fn after_error(&mut self, error: RunError) -> Result<W::State, RunError> {
        match error {
            RunError::Rejected { .. } if self.is_returning() => self.return_to_sender(),
            error => Err(error),
        }
    }

    /// The state in which the sender of a returned handoff runs again (its
    /// last input, read back from the record), after a rejection that
    /// [`is_returning`](Self::is_returning).
    pub(crate) fn return_to_sender(&mut self) -> Result<W::State, RunError> {
        let sender = self
            .transcript
            .entries
            .last()
            .and_then(|e| W::GRAPH.edges.get(e.edge as usize))
            .map(|e| e.from);
        let Some(Node::Agent(sender)) = sender else {
            return Err(RunError::Protocol(
                "a handoff was returned to a sender that is not an agent".into(),
            ));
        };
        let input = self
            .transcript
            .entries
            .iter()
            .rposition(|e| {
                e.status.ran()
                    && W::GRAPH.edges.get(e.edge as usize).map(|i| i.to)
                        == Some(Node::Agent(sender))
            })
            .ok_or_else(|| RunError::Protocol("the sender's input is not recorded".into()))?;
        let entry = &self.transcript.entries[input];
        let bytes = self.transcript.payload_bytes(input).unwrap_or_default();
        let payload = crate::spec::RecordedPayload {
            format: entry.format,
            bytes,
        };
        let state = W::restore(sender, &payload).map_err(RunError::Resume)?;
        self.turn_input = input;
        Ok(state)
    }

    /// The rejection reason a resumed run whose last record is a returned
    /// handoff goes on from.
    pub(crate) fn resume_return(&mut self, reason: RejectReason) -> Option<()> {
        let e = self.transcript.entries.last()?;
        let edge = W::GRAPH.edges.get(e.edge as usize)?;
        let Node::Agent(receiver) = edge.to else {
            return None;
        };
        let OnReject::Sender { max } = agent_on_reject::<W>(receiver) else {
            return None;
        };
        let times = *self.returns.get(receiver as usize)?;
        if times > max || !returnable(&reason) || !matches!(edge.from, Node::Agent(_)) {
            return None;
        }
        let i = self.transcript.len() - 1;
        let bytes = self.transcript.payload_bytes(i)?.to_vec();
        self.returned_payload = Some((e.edge, bytes));
        self.next_turn = TurnStart::Return(Box::new(Returned {
            by: W::GRAPH.node_name(edge.to),
            reason,
            times,
        }));
        Some(())
    }

    /// Milliseconds since the run started (its resumed part included).
    pub(super) fn elapsed_ms(&self) -> u64 {
        // Saturating: a resumed run's stored time may be anything (the
        // next record refuses it, `now_us`); a deadline is long passed.
        self.at_offset_us
            .saturating_add(self.clock.delta_as_nanos(self.started, self.clock.raw()) / 1000)
            / 1000
    }

    /// Microseconds since the run started (before it was resumed too): a
    /// typed error when a stored time leaves no room, never a wrap.
    pub(super) fn now_us(&self) -> Result<u64, RunError> {
        let elapsed_us = self.clock.delta_as_nanos(self.started, self.clock.raw()) / 1000;
        self.at_offset_us.checked_add(elapsed_us).ok_or_else(|| {
            RunError::Resume(format!(
                "the run's clock overflows: its records say it had run {} us before it was resumed",
                self.at_offset_us
            ))
        })
    }

    /// Starts agent `A`'s turn as the run's `TurnStart` says; a first
    /// delivery decides its receipt (the checks in `run/receipt.rs`, in
    /// their order, then the pre-conditions). On acceptance
    /// the turn is counted (its context is then
    /// [`turn_context`](Self::turn_context)); on rejection the record says
    /// why and the rejection is routed as `A` declares.
    #[doc(hidden)]
    // for generated turns; by hand, `turn` does it all
    // Always inlined into the generated turn: with the first delivery's
    // early return the compiler made it a call of its own, 14 instructions
    // a transition more (measured 2026-12-04).
    #[inline(always)]
    pub fn receive<A: Agent<W>>(&mut self, input: &A::Input) -> Result<(), RunError> {
        let contract = A::contract(input);
        self.turn.scope = contract.as_ref().map(|c| (c.authority, c.expires));
        // Nearly always a first delivery, which leaves `next_turn` as it
        // is: tested, not replaced (measured: the replace's read and write
        // of the whole value cost a transition about 5 instructions).
        if matches!(self.next_turn, TurnStart::Delivery) {
            return self.deliver_first::<A>(input, contract.as_ref(), None);
        }
        match std::mem::replace(&mut self.next_turn, TurnStart::Delivery) {
            TurnStart::Delivery => self.deliver_first::<A>(input, contract.as_ref(), None),
            TurnStart::Edited { by } => self.deliver_first::<A>(input, contract.as_ref(), Some(by)),
            // Their open questions alone, not the view: a view passed to a
            // call is built in memory at every receipt (measured: about
            // 20 instructions a transition).
            TurnStart::Return(returned) => {
                self.start_returned::<A>(contract.as_ref().map(|c| c.open), returned)
            }
            TurnStart::Decided => self.start_decided::<A>(contract.as_ref().map(|c| c.open)),
        }
    }

    /// The sender's turn again, on its accepted input, to handle the
    /// rejection of its handoff.
    fn start_returned<A: Agent<W>>(
        &mut self,
        open: Option<&dyn crate::spec::OpenQuestions>,
        returned: Box<Returned>,
    ) -> Result<(), RunError> {
        let sender = self
            .transcript
            .entries
            .get(self.turn_input)
            .and_then(|e| W::GRAPH.edges.get(e.edge as usize))
            .map(|e| e.to);
        if sender != Some(Node::Agent(A::INDEX)) {
            return Err(RunError::Protocol(format!(
                "a returned handoff's sender is not agent `{}`",
                agent_name::<W>(A::INDEX)
            )));
        }
        self.progress::<A>();
        self.begin_turn_open(open);
        self.shared.lock().returned = Some(returned);
        self.shared.mark();
        self.ready_turn::<A>();
        self.turn.lease_seq = self.turn_input as u32;
        self.hops += 1;
        Ok(())
    }

    /// The turn on a transfer whose receipt was decided before (a resumed
    /// run, or a person's approval).
    fn start_decided<A: Agent<W>>(
        &mut self,
        open: Option<&dyn crate::spec::OpenQuestions>,
    ) -> Result<(), RunError> {
        // A fan-out agent's turn again, in a run resumed inside its fan-out:
        // on the record it worked on, not the last (`run/fork_resume.rs`).
        let rerun = self.resume_fork.as_ref().and_then(|r| r.rerun_at());
        let input = rerun
            .as_ref()
            .map_or(self.transcript.len().wrapping_sub(1), |r| r.0);
        let last = self
            .transcript
            .entries
            .get(input)
            .map(|e| (e.status, e.edge));
        let accepted = last.is_some_and(|(status, edge)| {
            status.ran()
                && W::GRAPH.edges.get(edge as usize).map(|i| i.to) == Some(Node::Agent(A::INDEX))
        });
        if !accepted {
            return Err(RunError::Protocol(format!(
                "a resumed run's accepted transfer is not to agent `{}`",
                agent_name::<W>(A::INDEX)
            )));
        }
        self.turn_input = input;
        self.progress::<A>();
        self.begin_turn_open(open);
        if let Some(crate::spec::Receipt::Approved { by, edited }) =
            self.transcript.receipt(self.turn_input)
        {
            self.shared.lock().approval = Some(crate::run::Approval { by, edited });
            self.shared.mark();
        }
        // Its context (`turn_context`) at the hop the resumed run counted.
        self.ready_turn::<A>();
        self.turn.hop = self.hops.saturating_sub(1);
        if let Some((input, turn_seq, anchor)) = rerun {
            self.turn.lease_seq = input as u32;
            self.turn.turn_seq = turn_seq;
            if let Some(journal) = self.turn.journal.as_mut() {
                journal.anchor = anchor;
            }
        }
        Ok(())
    }

    /// The first delivery of the pending transfer to agent `A` (or of a
    /// person's edit of it, approved by `approver`): the receipt checks in
    /// their order, then the pre-conditions; on acceptance the receipt is
    /// committed and the turn counted.
    // Inlined into the generated turn, as the receipt was before it had a
    // function of its own: measured ~70 instructions a transition less.
    #[inline(always)]
    fn deliver_first<A: Agent<W>>(
        &mut self,
        input: &A::Input,
        contract: Option<&ContractView<'_>>,
        approver: Option<String>,
    ) -> Result<(), RunError> {
        let pending = self.transcript.entries.last().is_some_and(|e| {
            e.status == Status::Pending
                && W::GRAPH.edges.get(e.edge as usize).map(|i| i.to) == Some(Node::Agent(A::INDEX))
        });
        if !pending {
            return Err(RunError::Protocol(format!(
                "agent `{}` was given a turn without a transfer to it being recorded first (call `Runtime::handoff`)",
                agent_name::<W>(A::INDEX)
            )));
        }
        if self.limits.mode.is_enforce() {
            if let Some(reason) = self.check_receipt::<A>(input, contract) {
                return Err(self.reject_last(reason));
            }
        } else {
            // The view built again for the audit, not passed down: a view
            // that reaches a call is built in memory at every receipt.
            for reason in self.audit_receipt::<A>(A::contract(input).as_ref()) {
                self.verdict(reason)?;
            }
        }
        // The pre-conditions see the turn's context as its body will.
        self.ready_turn::<A>();
        if let Some(reason) = check_pre::<W, A>(input, &self.turn_context::<A>()) {
            self.verdict(reason)?;
        }
        let i = self.transcript.len() - 1;
        match &approver {
            Some(by) => self.transcript.note(
                i,
                crate::spec::Receipt::Approved {
                    by: by.clone(),
                    edited: true,
                },
            ),
            None => self.accept_last(),
        }
        // The turn's tool calls bind to the committed record.
        self.commit_last()?;
        self.bind_journal();
        self.receipt_decided();
        self.turn_input = i;
        self.progress::<A>();
        self.begin_turn(contract);
        if let Some(by) = approver {
            self.shared.lock().approval = Some(crate::run::Approval { by, edited: true });
            self.shared.mark();
        }
        self.hops += 1;
        Ok(())
    }

    /// Tells the spans and the metrics that the last transfer's receipt was
    /// decided.
    #[inline]
    pub(super) fn receipt_decided(&self) {
        self.handoff_event();
        crate::observe::telemetry::receipt_decided::<W>(
            self.transcript.entries.last().map(|e| e.edge),
            || {
                self.transcript
                    .receipt(self.transcript.len().saturating_sub(1))
            },
        );
    }

    /// Tells the progress callback, if any, that agent `A`'s turn starts.
    #[inline]
    pub(super) fn progress<A: Agent<W>>(&self) {
        if let Some(progress) = self.limits.progress {
            progress(&Progress {
                workflow: W::GRAPH.name,
                run_id: self.transcript.run_id,
                hop: self.hops,
                agent: agent_name::<W>(A::INDEX),
                elapsed_ms: self.elapsed_ms(),
            });
        }
    }

    /// Starts the log of a turn: what the run spent so far, nothing logged.
    /// Inlined for the tests nearly every turn ends with (nothing open,
    /// nothing logged, no disagreement), the rest called: measured, a call
    /// for the tests alone cost a transition about 25 instructions.
    #[inline(always)]
    pub(super) fn begin_turn(&mut self, contract: Option<&ContractView<'_>>) {
        self.begin_turn_open(contract.map(|c| c.open));
    }

    /// [`begin_turn`](Self::begin_turn) on the contract's open questions.
    #[inline(always)]
    fn begin_turn_open(&mut self, open: Option<&dyn crate::spec::OpenQuestions>) {
        if open.is_none_or(|open| open.is_empty())
            && self.open.is_empty()
            && self.joined_open.is_empty()
            && !self.shared.dirty.load(std::sync::atomic::Ordering::Relaxed)
            && self.spent.is_zero()
            && self.joined_dissent.is_none()
            && self.dissent.is_none()
        {
            return;
        }
        self.begin_turn_with(open);
    }

    /// [`begin_turn`](Self::begin_turn) when there is something to move or
    /// reset.
    #[inline(never)]
    // Given the view's open questions, not the view (a view passed to a
    // call is built in memory at every receipt).
    fn begin_turn_with(&mut self, open: Option<&dyn crate::spec::OpenQuestions>) {
        match open {
            Some(open) if !open.is_empty() => {
                self.open = open.questions().into_iter().map(str::to_owned).collect();
            }
            // A join's turn receives what its branches left open; nearly
            // always there is nothing to move, nor anything to drop.
            _ if self.open.is_empty() && self.joined_open.is_empty() => {}
            _ => self.open = std::mem::take(&mut self.joined_open),
        }
        if self.shared.dirty.load(std::sync::atomic::Ordering::Relaxed) || !self.spent.is_zero() {
            let mut log = self.shared.lock();
            *log = crate::run::TurnLog {
                spent_before: self.spent,
                ..Default::default()
            };
            self.shared
                .dirty
                .store(false, std::sync::atomic::Ordering::Relaxed);
        }
        self.begin_verdicts();
    }

    /// Ends the log of agent `A`'s turn: its record (when it called tools
    /// or charged usage) and the failure of a tool under a fallback policy.
    #[inline]
    fn end_turn<A: Agent<W>>(
        &mut self,
    ) -> (Option<TurnRecord>, Option<(crate::spec::ToolError, Then)>) {
        let leases = self.end_turn_leases();
        take_turn::<W, A>(&self.shared, self.turn_input, &mut self.spent, leases)
    }

    /// Records the current turn's input again, escalated (after a tool
    /// failure under `escalate`, or the agent's request), and suspends.
    fn escalate_turn<A: Agent<W>>(
        &mut self,
        reason: Escalation,
        turn: Option<TurnRecord>,
    ) -> RunError {
        let receipt = crate::spec::Receipt::Escalated {
            reason: reason.clone(),
        };
        let error = RunError::Suspended {
            agent: agent_name::<W>(A::INDEX),
            reason,
        };
        self.close_turn(receipt, turn, error)
    }

    /// Records the current turn's input again (a redelivery) with `receipt`
    /// and the turn's record, commits it, and returns `error` (or the
    /// ledger's error if the record could not be kept).
    fn close_turn(
        &mut self,
        receipt: crate::spec::Receipt,
        turn: Option<TurnRecord>,
        error: RunError,
    ) -> RunError {
        let input = self.turn_input;
        let Some(entry) = self.transcript.entries.get(input).cloned() else {
            return RunError::Protocol(format!(
                "the input of a turn that ended with `{error}` is not recorded"
            ));
        };
        let bytes = self
            .transcript
            .payload_bytes(input)
            .unwrap_or_default()
            .to_vec();
        let i = match self.push_redelivery(entry.edge, entry.format, &bytes) {
            Ok(i) => i,
            Err(e) => return e,
        };
        if let Some(turn) = turn {
            self.transcript.turns.push((i as u32, turn));
        }
        self.transcript.note(i, receipt);
        self.handoff_event();
        match self.commit_last() {
            Ok(()) => error,
            Err(ledger) => ledger,
        }
    }

    /// Records transfer `edge` again with `bytes` (pending), after an
    /// escalation; its index.
    pub(super) fn push_redelivery(
        &mut self,
        edge: u16,
        format: crate::spec::PayloadFormat,
        bytes: &[u8],
    ) -> Result<usize, RunError> {
        let at_us = self.now_us()?;
        let t = &mut self.transcript;
        let start = t.bytes.len();
        t.bytes.extend_from_slice(bytes);
        let (Ok(start), Ok(end)) = (u32::try_from(start), u32::try_from(t.bytes.len())) else {
            t.bytes.truncate(start);
            return Err(RunError::Encode {
                from: "?",
                to: "?",
                error: "the run's records exceed 4 GiB of payload bytes".into(),
            });
        };
        // The same transfer again: sent under the same scope.
        let original = t.entries.iter().rposition(|e| e.edge == edge);
        if let Some((authority, expires)) = original.and_then(|o| t.sender_scope(o)) {
            t.push_sender_scope(t.entries.len() as u32, authority, expires);
        }
        crate::run::payloads::push_grown(
            &mut t.entries,
            Entry {
                hop: self.hops,
                edge,
                status: Status::Pending,
                redelivery: true,
                format,
                start,
                end,
                link: crate::run::earlier::NONE,
                at_us,
            },
        );
        // Not a turn of its own: sent under the lease of the transfer it
        // repeats.
        let i = t.entries.len() - 1;
        t.link(i, None);
        self.keep_branches_current();
        Ok(i)
    }

    /// Applies a person's decision to the escalated last transfer (to
    /// `agent`, carrying `payload`): the state the run goes on in.
    pub(crate) fn decide(
        &mut self,
        agent: u16,
        payload: &crate::spec::RecordedPayload<'_>,
        decision: crate::spec::Decision,
    ) -> Result<W::State, RunError> {
        use crate::spec::Decision;
        let Some(edge) = self.transcript.entries.last().map(|e| e.edge) else {
            return Err(RunError::Decision("the run has no records".into()));
        };
        match decision {
            Decision::Approve { by } => {
                // A payload refused unrecorded (`null` stands in its place)
                // cannot be approved as it was: only an edit carries it on.
                let last = self.transcript.len().saturating_sub(1);
                if let Some(crate::spec::Receipt::Escalated {
                    reason:
                        Escalation::Rejected {
                            reason:
                                reason @ (RejectReason::TooDeep { .. } | RejectReason::NonFinite { .. }),
                        },
                }) = self.transcript.receipt(last)
                {
                    return Err(RunError::Decision(format!(
                        "the payload was not recorded ({reason}): edit it instead of approving it"
                    )));
                }
                let state = W::restore(agent, payload).map_err(RunError::Decision)?;
                let i = self.push_redelivery(edge, payload.format, payload.bytes)?;
                self.transcript
                    .note(i, crate::spec::Receipt::Approved { by, edited: false });
                self.commit_last()?;
                self.handoff_event();
                self.hops += 1;
                self.next_turn = TurnStart::Decided;
                Ok(state)
            }
            Decision::Reject { by, note } => {
                let i = self.push_redelivery(edge, payload.format, payload.bytes)?;
                let reason = RejectReason::HumanRejected { by, note };
                self.transcript.note(
                    i,
                    crate::spec::Receipt::Rejected {
                        reason: reason.clone(),
                    },
                );
                self.commit_last()?;
                self.handoff_event();
                let info = &W::GRAPH.edges[edge as usize];
                Err(RunError::Rejected {
                    from: W::GRAPH.node_name(info.from),
                    to: W::GRAPH.node_name(info.to),
                    reason,
                })
            }
            Decision::Edit { by, payload } => {
                // Checked before anything walks it (the validator, the
                // encoder's JSON view) recursively.
                if let Err(e) = crate::encode::check_value_depth(&payload) {
                    return Err(RunError::Decision(format!("the edited payload: {e}")));
                }
                if let Err(errors) = crate::export::validate::agent_input::<W>(agent, &payload) {
                    return Err(RunError::Decision(format!(
                        "the edited payload does not match the input schema of `{}`: {}",
                        agent_name::<W>(agent),
                        errors.join("; ")
                    )));
                }
                let text = payload.to_string();
                let state = W::restore(
                    agent,
                    &crate::spec::RecordedPayload {
                        format: crate::spec::PayloadFormat::Json,
                        bytes: text.as_bytes(),
                    },
                )
                .map_err(|e| {
                    RunError::Decision(format!("the edited payload does not read: {e}"))
                })?;
                let mut bytes = Vec::new();
                let format = W::encode_state(&state, &mut bytes).map_err(RunError::Decision)?;
                self.push_redelivery(edge, format, &bytes)?;
                self.next_turn = TurnStart::Edited { by };
                Ok(state)
            }
        }
    }

    /// Takes what agent `A`'s body returned: the turn's tool calls and
    /// usage are recorded with what comes next; a tool failure under its
    /// fallback, a spent budget, a passed deadline or a broken
    /// post-condition stops the run (or suspends it); otherwise its output
    /// is routed (recording the next transfer). The post-conditions that
    /// read a context get the turn's again ([`turn_context`](Self::turn_context)).
    #[doc(hidden)] // for generated turns; by hand, `turn` does it all
    pub fn deliver_turn<A: Agent<W>>(
        &mut self,
        result: Result<A::Next, Reject>,
    ) -> Result<Transition<W>, RunError> {
        // Checked now, on the turn's log as the body left it (a context
        // that borrows the run, when a condition reads one): the outcome
        // is applied in its place among the turn's other stops.
        let post = match &result {
            Ok(next) => check_post::<W, A>(next, || self.turn_context::<A>()),
            Err(_) => Ok(()),
        };
        self.deliver_checked::<A>(result, post)
    }

    fn deliver_checked<A: Agent<W>>(
        &mut self,
        result: Result<A::Next, Reject>,
        post: Result<(), &'static crate::spec::Condition>,
    ) -> Result<Transition<W>, RunError> {
        let agent = agent_name::<W>(A::INDEX);
        // A turn that used no lease and logged nothing (no tool call, no
        // usage, no failure) has no record to take: tested here rather than
        // by a call (`end_turn` finds the same).
        let logged = self.shared.leases_used.load(Ordering::Acquire)
            || self.shared.dirty.load(Ordering::Relaxed);
        // Boxed: what a logged turn ends with is large, and a turn that
        // logged nothing should not move it about (a copy a transition).
        let mut ended = logged.then(|| Box::new(self.end_turn::<A>()));
        let next = self.transcript.len() as u32;
        if let Some((error, then)) = ended.as_mut().and_then(|e| e.1.take()) {
            let turn = ended.and_then(|e| e.0);
            return Err(match then {
                Then::Escalate => self.escalate_turn::<A>(Escalation::ToolFailed { error }, turn),
                Then::Abort => self.fail_turn(RunError::ToolFailed { agent, error }, turn),
            });
        }
        // An overspent budget stops the run whatever the body returned (an
        // agent that hit it with `cx.charge(..)?` returned an error).
        if let Some((budget, limit, spent)) =
            self.limits.budget.and_then(|b| b.over(&self.spent, false))
        {
            let error = RunError::BudgetExhausted {
                agent,
                budget,
                limit,
                spent,
            };
            return Err(self.fail_turn(error, ended.and_then(|e| e.0)));
        }
        let next_out = match result {
            Ok(next_out) => next_out,
            Err(reject) if reject.is_escalation() => {
                let question = reject.reason().to_owned();
                return Err(self.escalate_turn::<A>(
                    Escalation::Requested { question },
                    ended.and_then(|e| e.0),
                ));
            }
            Err(error) => {
                return Err(self.fail_turn(
                    RunError::AgentFailed { agent, error },
                    ended.and_then(|e| e.0),
                ));
            }
        };
        let stopped = if let Some(after_ms) = self.limits.deadline_ms
            && self.elapsed_ms() >= after_ms
        {
            Some(RunError::DeadlinePassed { agent, after_ms })
        } else if let Err(c) = post {
            crate::observe::telemetry::post_condition_failed::<W, A>(c);
            Some(RunError::PostCondition {
                agent,
                condition: c.expr,
                message: c.message,
            })
        } else {
            None
        };
        if let Some(error) = stopped {
            return Err(self.fail_turn(error, ended.and_then(|e| e.0)));
        }
        self.keep_turn(next, ended.and_then(|e| e.0));
        next_out.route(self)
    }

    pub(super) fn keep_turn(&mut self, at: u32, turn: Option<TurnRecord>) {
        if let Some(turn) = turn {
            self.transcript.turns.push((at, turn));
        }
    }

    /// Records that the current turn failed and stopped the run: the turn's
    /// input again, with a `turn_failed` receipt saying why and the turn's
    /// tool calls, committed like any record.
    fn fail_turn(&mut self, error: RunError, turn: Option<TurnRecord>) -> RunError {
        let receipt = crate::spec::Receipt::TurnFailed {
            error: error.to_string(),
        };
        self.close_turn(receipt, turn, error)
    }

    /// How long agent `A`'s body may run: its timeout, or what is left of
    /// the run's deadline, whichever is shorter (`None`: no limit).
    #[doc(hidden)] // for generated turns; by hand, `turn` does it all
    pub fn turn_limit<A: Agent<W>>(&self) -> Option<std::time::Duration> {
        let left = self
            .limits
            .deadline_ms
            .map(|d| std::time::Duration::from_millis(d.saturating_sub(self.elapsed_ms())));
        match (A::TIMEOUT, left) {
            (Some(t), Some(l)) => Some(t.min(l)),
            (t, l) => t.or(l),
        }
    }

    /// Agent `A`'s body, run inside its `invoke_agent` span when the
    /// `tracing` feature is on, timed when `metrics` is (as it is, the body
    /// itself).
    #[doc(hidden)] // for generated turns; by hand, `turn` does it all
    pub fn instrument_agent<A: Agent<W>, F: Future<Output = Result<A::Next, Reject>>>(
        &self,
        body: F,
    ) -> impl Future<Output = F::Output> + use<'x, W, A, F> {
        let body = crate::observe::telemetry::timed_turn::<W, A, F>(body);
        #[cfg(feature = "tracing")]
        {
            tracing::Instrument::instrument(body, self.agent_span::<A>())
        }
        #[cfg(not(feature = "tracing"))]
        {
            body
        }
    }

    /// Agent `A`'s body (pinned where it is awaited), instrumented as
    /// [`instrument_agent`](Self::instrument_agent) does, under its
    /// [`turn_limit`](Self::turn_limit): its result, or `None` if the limit
    /// passed first (then [`timed_out`](Self::timed_out), once the body is
    /// dropped). One future with a limit or without, so that the body is
    /// polled from one place: where it is inlined, the body's result is
    /// built where the turn keeps it.
    #[doc(hidden)] // for generated turns; by hand, `turn` does it all
    #[inline(always)]
    pub fn limited_turn<A: Agent<W>, F: Future<Output = Result<A::Next, Reject>> + Unpin>(
        &self,
        body: F,
    ) -> crate::run::Limited<impl Future<Output = F::Output> + Unpin + use<'x, W, A, F>> {
        crate::run::Limited::new(self.instrument_agent::<A, F>(body), self.turn_limit::<A>())
    }

    /// The `invoke_agent` span of agent `A`'s turn (OpenTelemetry GenAI
    /// conventions).
    #[doc(hidden)] // for generated turns; by hand, `turn` does it all
    #[cfg(feature = "tracing")]
    pub fn agent_span<A: Agent<W>>(&self) -> tracing::Span {
        let name = agent_name::<W>(A::INDEX);
        tracing::info_span!(
            "invoke_agent",
            otel.name = %format_args!("invoke_agent {name}"),
            otel.kind = "internal",
            gen_ai.operation.name = "invoke_agent",
            gen_ai.agent.name = name,
            gen_ai.agent.id = A::INDEX,
            gen_ai.conversation.id = self.transcript.run_id,
            // Made after the receipt counted the turn: the turns before it.
            workflow.hop = self.hops.saturating_sub(1),
            workflow.seq = self.transcript.len().saturating_sub(1),
        )
    }

    /// Emits the handoff event of the last transfer (its receipt decided).
    #[cfg(not(feature = "tracing"))]
    pub(super) fn handoff_event(&self) {}

    /// Emits the handoff event of the last transfer (its receipt decided).
    #[cfg(feature = "tracing")]
    pub(super) fn handoff_event(&self) {
        let Some(e) = self.transcript.entries.last() else {
            return;
        };
        let Some(edge) = W::GRAPH.edges.get(e.edge as usize) else {
            return;
        };
        let receipt = match e.status {
            Status::Pending => "pending",
            Status::Accepted => "accepted",
            Status::Rejected => "rejected",
            Status::Escalated => "escalated",
            Status::Approved => "approved",
            Status::Audited => "audited",
            Status::TurnFailed => "turn_failed",
        };
        let reason = match self.transcript.receipt(self.transcript.len() - 1) {
            Some(crate::spec::Receipt::Rejected { reason }) => reason.to_string(),
            Some(crate::spec::Receipt::Escalated { reason }) => reason.to_string(),
            _ => String::new(),
        };
        tracing::info!(
            workflow.sender = W::GRAPH.node_name(edge.from),
            workflow.receiver = W::GRAPH.node_name(edge.to),
            workflow.seq = self.transcript.len().saturating_sub(1),
            workflow.payload_type = edge.payload,
            workflow.receipt = receipt,
            workflow.reject_reason = %reason,
            "handoff"
        );
    }

    /// The error for agent `A` running past its [`turn_limit`](Self::turn_limit):
    /// its timeout, or the run's deadline.
    #[doc(hidden)] // for generated turns; by hand, `turn` does it all
    pub fn timed_out<A: Agent<W>>(&mut self) -> RunError {
        let agent = agent_name::<W>(A::INDEX);
        let (turn, _) = self.end_turn::<A>();
        let error = match self.limits.deadline_ms {
            Some(after_ms) if self.elapsed_ms() >= after_ms => {
                RunError::DeadlinePassed { agent, after_ms }
            }
            _ => RunError::Timeout {
                agent,
                after_ms: A::TIMEOUT.map_or(0, |t| t.as_millis() as u64),
            },
        };
        self.fail_turn(error, turn)
    }

    /// One whole turn of agent `A`: [`receive`](Self::receive), its body
    /// (under its timeout), [`deliver_turn`](Self::deliver_turn). Generated code
    /// inlines these steps; hand-written workflows can call this.
    pub async fn turn<A: Agent<W>>(&mut self, input: A::Input) -> Result<Transition<W>, RunError> {
        self.receive::<A>(&input)?;
        let cx = self.turn_context::<A>();
        // As the generated turn does: the body's future pinned where it is
        // awaited (the instrumentation holds a `Pin<&mut _>`, not the
        // future), and dropped before a timeout is recorded.
        let finished = {
            let body = std::pin::pin!(A::run(input, cx));
            self.limited_turn::<A, _>(body).await
        };
        let Some(result) = finished else {
            return Err(self.timed_out::<A>());
        };
        self.deliver_turn::<A>(result)
    }
}

/// Ends the log of agent `A`'s turn kept in `shared`: its record (when it
/// called tools or charged usage; `turn_input` is the transfer it worked
/// on) and the failure of a tool under a fallback policy; what it spent is
/// added to `spent`.
pub(super) fn take_turn<W: Workflow, A: Agent<W>>(
    shared: &RunShared,
    turn_input: usize,
    spent: &mut Usage,
    leases: Vec<crate::spec::LeaseAct>,
) -> (Option<TurnRecord>, Option<(crate::spec::ToolError, Then)>) {
    if leases.is_empty() && !shared.dirty.load(std::sync::atomic::Ordering::Relaxed) {
        return (None, None);
    }
    let mut log = shared.lock();
    let mut calls = std::mem::take(&mut log.calls);
    calls.sort_by_key(|c| c.index);
    let mut model_calls = std::mem::take(&mut log.model_calls);
    model_calls.sort_by_key(|c| c.index);
    let usage = log.usage;
    let failure = log.failure.take().map(|f| *f);
    log.usage = Usage::default();
    log.returned = None;
    log.approval = None;
    drop(log);
    spent.add(&usage);
    let logged =
        !calls.is_empty() || !model_calls.is_empty() || !usage.is_zero() || !leases.is_empty();
    let record = logged.then(|| TurnRecord {
        agent: Cow::Borrowed(agent_name::<W>(A::INDEX)),
        input_seq: turn_input as u32,
        tool_calls: calls,
        model_calls,
        usage,
        unresolved: Vec::new(),
        leases,
    });
    (record, failure)
}

/// What a rejection at agent `a`'s receipt does.
pub(crate) fn agent_on_reject<W: Workflow>(a: u16) -> OnReject {
    W::GRAPH
        .agents
        .get(a as usize)
        .map_or(OnReject::Abort, |a| a.on_reject)
}

/// Whether a rejection can be routed as the receiver declares (back to the
/// sender, or to a person): the ones about what was sent. Run-wide limits
/// (hop cap, loop bounds, deadline, budgets), an authority the receiver
/// does not own and a person's rejection stop the run whatever the receiver
/// declares: nobody's approval lifts a limit of the run.
fn returnable(reason: &RejectReason) -> bool {
    !matches!(
        reason,
        RejectReason::LoopBound { .. }
            | RejectReason::HopCap { .. }
            | RejectReason::DeadlinePassed { .. }
            | RejectReason::BudgetExhausted { .. }
            | RejectReason::ScopeNotOwned { .. }
            | RejectReason::HumanRejected { .. }
    )
}

/// Agent `A`'s input writer: its direct one ([`Agent::WRITE_INPUT`]), or
/// the serde path's.
#[inline(always)]
fn input_writer<W: Workflow, A: Agent<W>>() -> crate::encode::Writer<A::Input>
where
    A::Input: Serialize,
{
    A::WRITE_INPUT.unwrap_or(crate::encode::through_serde)
}
