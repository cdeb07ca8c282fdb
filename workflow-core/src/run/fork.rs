//! A fan-out: several agent turns that run at the same time, each with its
//! own receipt and record, and a join that receives every outcome.
//!
//! The steps, in the order a turn of a fork state takes them (generated
//! code and hand-written workflows alike):
//!
//! 1. [`Runtime::fork`] opens the fan-out after the fan-out agent's turn;
//! 2. [`Runtime::branch`], once per branch in declaration order, records the
//!    branch's transfer and decides its receipt (so the hop cap and the
//!    run's limits are checked one branch after the other, never raced);
//! 3. [`run_branches`] runs the accepted bodies concurrently, on the
//!    caller's task, each under its own timeout;
//! 4. [`Runtime::settle`], once per branch in declaration order, records
//!    what each branch ended with, typed as a [`Branch`];
//! 5. [`Runtime::join`] records the join's transfer: the join agent's turn
//!    then starts as any other (its receipt, its body).
//!
//! Records are committed in that order whatever order the bodies finish
//! in: the chain stays linear and a replay compares like with like.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::Serialize;

use crate::run::receipt::{check_post, check_pre};
use crate::run::{Context, OwnedTurn, RunShared, Runtime, Status, TurnLog, TurnRef};
use crate::spec::{Agent, Branch, ContractView, Expiry, Workflow};
use crate::spec::{Escalation, Fork, Lineage, Node, Reject, RejectReason, RunError, Then};
use crate::spec::{TurnRecord, Usage, agent_name};

/// A fan-out under way: opened by [`Runtime::fork`], consumed by
/// [`Runtime::join`].
pub struct ForkRun {
    pub(super) fork: &'static Fork,
    /// The record the fan-out agent's turn worked on.
    pub(super) at: u32,
    /// The scope the fan-out agent worked under: the grantor of every
    /// branch's lease.
    pub(super) scope: Option<(&'static str, Expiry)>,
    /// The questions the fan-out agent received: each branch's handoff
    /// carries them forward (or resolves them).
    pub(super) open: Vec<String>,
    /// What the run had spent when the branches started.
    pub(super) spent: Usage,
    /// What the branches spend, all together, while they run.
    pub(super) pool: Arc<std::sync::Mutex<Usage>>,
    /// Each branch's last record so far.
    pub(super) heads: Vec<u32>,
    /// The sequence number the next accepted branch turn's record will
    /// take (its journal's key).
    pub(super) next_outcome: u32,
    /// The sequence number of the next record the rounds of a fan-out whose
    /// branches take more than one turn write (or, resumed, read back):
    /// each round's turns are numbered from it ([`Runtime::ready`]).
    pub(super) round_base: u32,
    /// What the branches left open, for the join's turn.
    pub(super) carried: Vec<String>,
    /// A map (`map(worker, max = N)`): every branch takes the fork's one
    /// branch's edges, one branch per item.
    map: bool,
    /// A fan-out resumed after a crash: the records it already has.
    pub(super) resume: Option<crate::run::ForkResume>,
    /// Branches run in rounds: an accepted turn's body is readied at the
    /// start of its round ([`Runtime::ready`]), once the sequence number of
    /// the record its turn will write is known.
    pub(super) deferred: bool,
    /// A fan-out inside a branch of another (nested): that branch, and
    /// which of its turns (its depth) fanned out.
    pub(super) outer: Option<(u16, u16)>,
    /// The disagreement the fan-out agent received (a join's turn that fans
    /// out): every branch's start must carry it forward.
    pub(super) dissent: Option<crate::spec::Disagreement>,
    /// An empty map inside a branch: the record of the turn that mapped,
    /// kept with the join.
    pub(super) keep: Option<TurnRecord>,
    /// The fan-out's span: the branches' `invoke_agent` spans are its
    /// children, siblings of each other.
    #[cfg(feature = "tracing")]
    span: tracing::Span,
}

impl ForkRun {
    /// The edges of branch `branch`: its own, or for a map the one
    /// receiver's.
    fn edges(&self, branch: u16) -> Option<&'static crate::spec::ForkBranch> {
        let k = if self.map { 0 } else { branch as usize };
        let branches: &'static [crate::spec::ForkBranch] = self.fork.branches;
        branches.get(k)
    }

    /// The record the fan-out agent's turn worked on: the fan-out's id in
    /// the records' [`Lineage`].
    pub fn at(&self) -> u32 {
        self.at
    }

    /// How many branches it started (for a map, its items).
    pub fn branches(&self) -> usize {
        self.heads.len()
    }
}

/// One branch of a fan-out, from its receipt to what it ended with.
pub struct BranchTurn<'x, W: Workflow, A: Agent<W>> {
    pub(super) branch: u16,
    /// The transfer this turn works on: the branch's start, or a step.
    pub(super) start: u32,
    /// Which of the branch's turns this is (0: the first).
    pub(super) depth: u16,
    pub(super) state: BranchState<'x, W, A>,
    /// The scope the branch works under.
    pub(super) scope: Option<(&'static str, Expiry)>,
    /// The questions the branch received.
    pub(super) open: Vec<String>,
    /// A nested join's turn: the disagreement among the verdicts it
    /// received, which what it hands on must carry forward.
    pub(super) dissent: Option<crate::spec::Disagreement>,
    /// The branch's own turn log, its budget pooled with its siblings'.
    shared: Option<Arc<RunShared>>,
    /// What the body's context knew of its turn, kept for the
    /// post-conditions that read a context (only for an agent that has
    /// some): they see the body's view, as a sequential turn's do.
    post_view: Option<Box<OwnedTurn<'x>>>,
    #[cfg(feature = "tracing")]
    span: tracing::Span,
}

pub(super) enum BranchState<'x, W: Workflow, A: Agent<W>> {
    /// Its receipt refused it: the body never runs.
    Refused(RejectReason),
    /// A resumed fan-out: its outcome is recorded (at sequence number
    /// `seq`), read back instead of running the body again. `value`: the
    /// record is the turn's value handed on (not a failed or cancelled
    /// turn), which counts toward a quorum as a body that returned one.
    Recorded { seq: u32, value: bool },
    /// Accepted in a fan-out whose branches run in rounds: its body is
    /// readied at the start of its round ([`Runtime::ready`]). `anchor`:
    /// the hash of the transfer it works on; `resumed`: a resumed turn,
    /// whose record may be read back or whose journal served.
    Accepted {
        input: A::Input,
        anchor: Arc<str>,
        resumed: bool,
    },
    /// Accepted, waiting for [`run_branches`].
    Ready {
        input: A::Input,
        cx: Context<'x, W, A>,
        limit: Option<std::time::Duration>,
    },
    /// Its body is running.
    Running,
    /// Its body returned (`Some`), or ran past its limit (`None`).
    Ran(Option<Result<A::Next, Reject>>),
    /// Its body was dropped before it returned: the join's quorum was
    /// reached without it.
    Cancelled(String),
}

impl<W: Workflow, A: Agent<W>> BranchTurn<'_, W, A> {
    /// A branch started at record `start`, under `scope`, not decided yet.
    pub(super) fn new(branch: u16, start: u32, scope: Option<(&'static str, Expiry)>) -> Self {
        BranchTurn {
            branch,
            start,
            depth: 0,
            state: BranchState::Running,
            scope,
            open: Vec::new(),
            dissent: None,
            shared: None,
            post_view: None,
            #[cfg(feature = "tracing")]
            span: tracing::Span::none(),
        }
    }

    /// Its branch (for a map, its item).
    pub fn branch(&self) -> u16 {
        self.branch
    }

    /// Whether the branch's receipt accepted it (its body runs).
    pub fn accepted(&self) -> bool {
        !matches!(self.state, BranchState::Refused(_))
    }
}

/// What a branch turn ended with, from [`Runtime::finish`].
pub enum Finished<N> {
    /// Its body returned `N` in time and passed its checks: the caller
    /// hands it on, to the join ([`Runtime::hand_to_join`]) or to the
    /// branch's next agent ([`Runtime::step`]).
    Ran(N, Handing),
    /// It ended without handing anything on (refused at its receipt,
    /// failed, timed out, cancelled), recorded: the branch's outcome.
    Ended(Branch<Infallible>),
    /// A resumed fan-out: what this turn handed on is recorded, read back
    /// instead of running the body again.
    Recorded {
        /// The branch.
        branch: u16,
        /// Which of the branch's turns it was (0: the first).
        depth: u16,
        /// The record of what it handed on.
        seq: u32,
        /// The edge that record took: to the join, or to the branch's next
        /// agent.
        edge: u16,
    },
}

/// What a branch turn that ran hands on with its output: where it stands
/// in its branch, the questions it received, its turn's record.
pub struct Handing {
    branch: u16,
    /// The record the turn worked on.
    start: u32,
    depth: u16,
    agent: &'static str,
    pub(super) open: Vec<String>,
    pub(super) record: Option<TurnRecord>,
    /// The disagreement the turn received (a nested join's), which what it
    /// hands on must carry forward.
    pub(super) dissent: Option<crate::spec::Disagreement>,
    /// A resumed turn that fanned out before the crash (its fan-out's first
    /// start is recorded, at this sequence number): run again, it must fan
    /// out again.
    fanned: Option<u32>,
}

impl Handing {
    /// Anything but fanning out again, from a turn that fanned out before
    /// the crash: refused, nothing written.
    pub(super) fn must_fan_out(&self, run_id: u64) -> Result<(), RunError> {
        match self.fanned {
            Some(first) => Err(RunError::Resume(format!(
                "run {run_id}: the turn of branch {} that worked on #{} fanned out before the crash (its fan-out's first start is #{first}) and, run again, did not: it did not repeat itself",
                self.branch, self.start
            ))),
            None => Ok(()),
        }
    }
}

impl Handing {
    /// The branch, the record the turn worked on, and which of the
    /// branch's turns it was.
    pub(super) fn place(&self) -> (u16, u32, u16) {
        (self.branch, self.start, self.depth)
    }
}

/// A branch whose body [`run_branches`] can run.
pub trait BranchBody: Send {
    /// The body's future, once: `None` for a branch refused at its receipt
    /// or already run. It resolves to whether the body returned a value
    /// (`Ok`, in time).
    fn body(&mut self) -> Option<Pin<Box<dyn Future<Output = bool> + Send + '_>>>;

    /// Marks a branch whose body was dropped before it returned as
    /// cancelled, for `reason` (a branch that ran, or never ran, is left
    /// as it is).
    fn cancel(&mut self, reason: &str);

    /// Whether settling the branch writes (or, resumed, reads back) a
    /// record: its receipt accepted it.
    fn writes(&self) -> bool;

    /// Whether the branch, resumed, reads back a turn that returned a
    /// value: it counts toward a quorum before any body runs.
    fn recorded_value(&self) -> bool;
}

impl<W: Workflow, A: Agent<W>> BranchBody for BranchTurn<'_, W, A> {
    fn writes(&self) -> bool {
        self.accepted()
    }

    fn recorded_value(&self) -> bool {
        matches!(self.state, BranchState::Recorded { value: true, .. })
    }

    fn cancel(&mut self, reason: &str) {
        if matches!(self.state, BranchState::Running) {
            self.state = BranchState::Cancelled(reason.to_owned());
        }
    }

    fn body(&mut self) -> Option<Pin<Box<dyn Future<Output = bool> + Send + '_>>> {
        let BranchState::Ready { .. } = self.state else {
            return None;
        };
        let BranchState::Ready { input, cx, limit } =
            std::mem::replace(&mut self.state, BranchState::Running)
        else {
            return None;
        };
        let body = crate::observe::telemetry::timed_turn::<W, A, _>(A::run(input, cx));
        #[cfg(feature = "tracing")]
        let body = tracing::Instrument::instrument(body, self.span.clone());
        let state = &mut self.state;
        let shared = self.shared.as_deref();
        Some(Box::pin(async move {
            let ran = match limit {
                None => Some(body.await),
                Some(limit) => tokio::time::timeout(limit, body).await.ok(),
            };
            // A value returned after a tool failed under its fallback
            // policy is the branch's failure (`finish`), never counted: as
            // its record, read back, is not.
            let tool_failed = shared.is_some_and(|s| {
                s.dirty.load(std::sync::atomic::Ordering::Relaxed) && s.lock().failure.is_some()
            });
            let value = matches!(ran, Some(Ok(_))) && !tool_failed;
            *state = BranchState::Ran(ran);
            value
        }))
    }
}

/// Runs the bodies of the accepted branches at the same time, on the
/// caller's task, until every one has returned or run past its limit. A
/// branch's body that waits (a tool, a model, a timer) never holds up the
/// others: sixteen bodies that each sleep 10 ms take about 10 ms together.
pub async fn run_branches(branches: &mut [&mut dyn BranchBody]) {
    run_bodies(branches, None).await;
}

/// [`run_branches`] under a quorum join (`quorum = N`): once `quorum`
/// bodies have returned a value, the bodies still running are dropped (at
/// once, never polled again) and their branches cancelled, their outcome
/// [`Branch::Cancelled`] saying so. Which branches those are depends on
/// which finished first; what is recorded for each does not (see
/// [`Runtime::settle`]). Returns how many bodies were cut.
pub async fn run_branches_quorum(branches: &mut [&mut dyn BranchBody], quorum: usize) -> usize {
    let cut = run_bodies(branches, Some(quorum)).await;
    if !cut.is_empty() {
        let reason = quorum_reason(quorum);
        for &i in &cut {
            branches[i].cancel(&reason);
        }
    }
    cut.len()
}

/// Why a branch a quorum cut is cancelled (as its outcome and, after
/// `cancelled: `, its record say).
pub(super) fn quorum_reason(quorum: usize) -> String {
    format!("the join's quorum of {quorum} done branches was reached first")
}

/// The quorum a cancelled branch's `reason` names, if it is one
/// [`quorum_reason`] wrote.
pub(super) fn quorum_of(reason: &str) -> Option<usize> {
    let n = reason
        .strip_prefix("the join's quorum of ")?
        .strip_suffix(" done branches was reached first")?;
    n.parse().ok().filter(|&q| quorum_reason(q) == reason)
}

/// Polls every body until each has returned or, with a quorum, until that
/// many have returned a value; the indices of the bodies dropped unfinished.
async fn run_bodies(branches: &mut [&mut dyn BranchBody], quorum: Option<usize>) -> Vec<usize> {
    // Resumed, the branches whose value is read back count as done: a
    // quorum they reach cuts the rest before any is polled.
    let mut done = branches.iter().filter(|b| b.recorded_value()).count();
    let reached = |done: usize| quorum.is_some_and(|q| done >= q);
    // A body that has returned is dropped, never polled again.
    let mut bodies: Vec<Option<_>> = branches.iter_mut().map(|b| b.body()).collect();
    let mut cut = Vec::new();
    std::future::poll_fn(|cx| {
        if !reached(done) {
            for slot in bodies.iter_mut() {
                if let Some(body) = slot
                    && let std::task::Poll::Ready(value) = body.as_mut().poll(cx)
                {
                    done += usize::from(value);
                    *slot = None;
                }
            }
        }
        if reached(done) {
            for (i, slot) in bodies.iter_mut().enumerate() {
                if slot.take().is_some() {
                    cut.push(i);
                }
            }
        }
        if bodies.iter().any(Option::is_some) {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    cut
}

impl<'x, W: Workflow> Runtime<'x, W> {
    /// Opens fan-out `fork` after its agent's turn (the run's current
    /// turn): the branches are recorded as branches of the record that turn
    /// worked on, lent its scope, and checked against what it received.
    #[doc(hidden)] // for generated fork turns and hand-written workflows
    pub fn fork(&mut self, fork: &'static Fork) -> Result<ForkRun, RunError> {
        self.open_fork(fork, fork.branches.len(), false)
    }

    /// Opens fan-out `fork` with `branches` branches (`map`: one per item of
    /// a map, all taking the fork's one branch's edges).
    pub(super) fn open_fork(
        &mut self,
        fork: &'static Fork,
        branches: usize,
        map: bool,
    ) -> Result<ForkRun, RunError> {
        let at = self.turn_input as u32;
        let worked_on = self
            .transcript
            .entries
            .get(self.turn_input)
            .and_then(|e| W::GRAPH.edges.get(e.edge as usize))
            .map(|e| e.to);
        if worked_on != Some(Node::Agent(fork.from)) {
            return Err(RunError::Protocol(format!(
                "a fan-out from agent `{}` was opened after another agent's turn",
                agent_name::<W>(fork.from)
            )));
        }
        let first = self.transcript.len() as u32;
        #[cfg(feature = "tracing")]
        let span = {
            let name = agent_name::<W>(fork.from);
            tracing::info_span!(
                "fan_out",
                otel.name = %format_args!("fan_out {name}"),
                otel.kind = "internal",
                gen_ai.agent.name = name,
                gen_ai.conversation.id = self.transcript.run_id,
                workflow.fork = at,
                workflow.branches = branches,
            )
        };
        // Resumed inside this fan-out: its first start is recorded, and a
        // fan-out agent's turn run again is neither counted twice nor
        // recorded twice.
        let resume = self.resume_fork.take().filter(|r| r.at == at).map(|r| *r);
        let first = match &resume {
            Some(r) => {
                if let Some(spent) = r.spent {
                    self.spent = spent;
                    let len = self.transcript.len() as u32;
                    self.transcript.turns.retain(|(i, _)| *i < len);
                }
                r.starts.first().map_or(first, |&(seq, _)| seq)
            }
            None => first,
        };
        Ok(ForkRun {
            fork,
            at,
            scope: self.turn.scope,
            open: std::mem::take(&mut self.open),
            spent: self.spent,
            pool: Arc::default(),
            heads: vec![0; branches],
            next_outcome: first.saturating_add(branches as u32),
            round_base: first.saturating_add(branches as u32),
            carried: Vec::new(),
            map,
            resume,
            deferred: false,
            outer: None,
            dissent: self.dissent.take().map(|d| *d),
            keep: None,
            #[cfg(feature = "tracing")]
            span,
        })
    }

    /// Opens fan-out `fork`, whose branches take more than one turn, after
    /// its agent's turn: as [`fork`](Self::fork), its branches run in
    /// rounds, each round's accepted turns readied at its start
    /// ([`ready`](Self::ready)).
    #[doc(hidden)] // for generated fork turns and hand-written workflows
    pub fn fork_rounds(&mut self, fork: &'static Fork) -> Result<ForkRun, RunError> {
        // Its starts' turns are readied as they are accepted, as a one-turn
        // fan-out's are (the records their turns write follow the starts);
        // from the first round on, at each round's start.
        self.open_fork(fork, fork.branches.len(), false)
    }

    /// Opens map fan-out `fork` (`map(worker, max = N)`, its one branch
    /// `worker`) over `items` items: one branch per item, numbered in the
    /// list's order. More items than `max` is refused (`Err`), never cut:
    /// generated code checks the bound first as the fan-out agent's
    /// post-condition, so that the refusal is recorded as its failed turn.
    #[doc(hidden)] // for generated fork turns and hand-written workflows
    pub fn fork_map(
        &mut self,
        fork: &'static Fork,
        items: usize,
        max: u32,
    ) -> Result<ForkRun, RunError> {
        if items > max as usize || items > usize::from(u16::MAX) {
            return Err(RunError::Protocol(format!(
                "agent `{}` mapped {items} items, over its bound of {max}",
                agent_name::<W>(fork.from)
            )));
        }
        self.open_fork(fork, items, true)
    }

    /// Records the transfer of `input` to branch `branch`'s agent `A` and
    /// decides its receipt: the checks of any handoff and receipt, in their
    /// order, then `A`'s pre-conditions. A refusal is recorded and becomes
    /// the branch's outcome ([`Branch::Rejected`]): it neither stops the run
    /// nor goes back to the sender nor waits for a person, so the other
    /// branches and the join go on. An error is returned only when the run
    /// cannot go on (its ledger failed, a wrong edge).
    #[doc(hidden)] // for generated fork turns and hand-written workflows
    pub fn branch<A: Agent<W>>(
        &mut self,
        fork: &mut ForkRun,
        branch: u16,
        input: A::Input,
    ) -> Result<BranchTurn<'x, W, A>, RunError>
    where
        A::Input: Serialize,
    {
        self.branch_with::<A>(fork, branch, input, None)
    }

    /// [`branch`](Self::branch), with the record of the turn that fanned
    /// out kept on the start (a fan-out inside a branch: its agent's turn
    /// was a branch turn).
    pub(super) fn branch_with<A: Agent<W>>(
        &mut self,
        fork: &mut ForkRun,
        branch: u16,
        input: A::Input,
        keep: Option<TurnRecord>,
    ) -> Result<BranchTurn<'x, W, A>, RunError>
    where
        A::Input: Serialize,
    {
        let Some(edge) = fork.edges(branch).map(|b| b.start) else {
            return Err(RunError::Protocol(format!(
                "fan-out of agent `{}` has no branch {branch}",
                agent_name::<W>(fork.fork.from)
            )));
        };
        let info = self.edge(edge, Node::End, false)?;
        if info.to != Node::Agent(A::INDEX) || info.from != Node::Agent(fork.fork.from) {
            return Err(RunError::Protocol(format!(
                "branch {branch} of the fan-out of `{}` does not lead to agent `{}`",
                agent_name::<W>(fork.fork.from),
                agent_name::<W>(A::INDEX)
            )));
        }
        // Resumed: a start already recorded is not recorded again.
        let recorded = fork
            .resume
            .as_ref()
            .and_then(|r| r.starts.get(branch as usize).cloned());
        if let Some(recorded) = recorded {
            self.keep_turn(recorded.0, keep);
            return self.branch_recorded::<A>(fork, branch, input, recorded);
        }
        // Every branch is lent the fan-out agent's scope, as if it were the
        // only receiver: the transfer records it as its sender's scope.
        self.turn.scope = fork.scope;
        let refused = self.record_input::<A>(edge, info, &input, Status::Pending)?;
        let start = (self.transcript.len() - 1) as u32;
        self.keep_turn(start, keep);
        // A join's turn that fans out: each start carries its disagreement.
        let dropped = fork
            .dissent
            .as_ref()
            .filter(|d| !d.carried_by(A::contract(&input).as_ref()))
            .map(|d| RejectReason::VerdictDropped {
                fork: d.fork,
                verdicts: d.verdicts.clone(),
            });
        self.transcript.lineage.push((
            start,
            Lineage::Start {
                fork: fork.at,
                branch,
            },
        ));
        if let Some(head) = fork.heads.get_mut(branch as usize) {
            *head = start;
        }
        let mut turn = BranchTurn::new(branch, start, None);
        // The sender's checks: a payload the encoder refused, a question
        // the fan-out agent received and this branch's handoff dropped.
        self.open.clone_from(&fork.open);
        let sender = refused.into_iter().chain(dropped).collect();
        self.receive_in_branch(fork, &mut turn, input, sender)?;
        Ok(turn)
    }

    /// The receipt of a branch's transfer just recorded (at `turn.start`):
    /// the sender's checks (`sender`, then a question received, in
    /// `self.open`, that `input` drops), the receiver's, its
    /// pre-conditions; a refusal is recorded and becomes the turn's state,
    /// an accepted turn's body is readied.
    pub(super) fn receive_in_branch<A: Agent<W>>(
        &mut self,
        fork: &mut ForkRun,
        turn: &mut BranchTurn<'x, W, A>,
        input: A::Input,
        sender: Vec<RejectReason>,
    ) -> Result<(), RunError> {
        let contract = A::contract(&input);
        self.turn.scope = contract.as_ref().map(|c| (c.authority, c.expires));
        turn.scope = self.turn.scope;
        let dropped = self
            .dropped_question(contract.as_ref())
            .map(|question| RejectReason::UncertaintyDropped { question });
        for reason in sender.into_iter().chain(dropped) {
            if let Some(refusal) = self.branch_verdict(reason)? {
                turn.state = BranchState::Refused(refusal);
                return Ok(());
            }
        }
        // The receiver's checks.
        let reasons = if self.limits.mode.is_enforce() {
            self.check_receipt::<A>(&input, contract.as_ref())
                .into_iter()
                .collect()
        } else {
            self.audit_receipt::<A>(contract.as_ref())
        };
        for reason in reasons {
            if let Some(refusal) = self.branch_verdict(reason)? {
                turn.state = BranchState::Refused(refusal);
                return Ok(());
            }
        }
        let owned = self.owned_turn::<A>(self.turn.scope);
        let pre = check_pre::<W, A>(&input, &Context::new(self.root, self.deps, owned.lend()));
        if let Some(reason) = pre
            && let Some(refusal) = self.branch_verdict(reason)?
        {
            turn.state = BranchState::Refused(refusal);
            return Ok(());
        }
        self.accept_last();
        self.commit_last()?;
        self.receipt_decided();
        self.turn_input = turn.start as usize;
        if !fork.deferred {
            self.progress::<A>();
        }
        self.begin_turn(contract.as_ref());
        turn.open = std::mem::take(&mut self.open);
        let anchor = self.prev_hash.clone();
        if fork.deferred {
            turn.state = BranchState::Accepted {
                input,
                anchor,
                resumed: false,
            };
        } else {
            self.start_body(fork, turn, input, owned, anchor, None);
        }
        Ok(())
    }

    /// Readies the body of branch `turn`, accepted in a fan-out whose
    /// branches run in rounds: called at the start of each round, for each
    /// of its turns in order (a turn not accepted is left as it is). Its
    /// journal takes the sequence number of the record its turn will write,
    /// the next of the round's; a resumed turn whose record is written is
    /// read back instead, a cut one runs again served the calls journaled
    /// under it.
    #[doc(hidden)] // for generated fork turns and hand-written workflows
    pub fn ready<A: Agent<W>>(
        &mut self,
        fork: &mut ForkRun,
        turn: &mut BranchTurn<'x, W, A>,
    ) -> Result<(), RunError> {
        if !fork.deferred {
            // The first round of a fan-out whose starts' turns were readied
            // as they were accepted: the records after the ones their turns
            // write are numbered from here on, at each round's start.
            fork.deferred = true;
            fork.round_base = fork.round_base.max(fork.next_outcome);
        }
        if !matches!(turn.state, BranchState::Accepted { .. }) {
            return Ok(());
        }
        let BranchState::Accepted {
            input,
            anchor,
            resumed,
        } = std::mem::replace(&mut turn.state, BranchState::Running)
        else {
            return Ok(());
        };
        fork.next_outcome = fork.round_base;
        let readied = if resumed {
            self.resume_ready(fork, turn, input, anchor)
        } else {
            let mut owned = self.owned_turn::<A>(turn.scope);
            owned.turn.lease_seq = turn.start;
            self.progress::<A>();
            self.start_body(fork, turn, input, owned, anchor, None);
            Ok(())
        };
        fork.round_base = fork.next_outcome;
        readied
    }

    /// Records what a branch turn handed on (`handing`, from
    /// [`finish`](Self::finish)) to its branch's next agent `B` over
    /// `edge`: a step of the branch (its lineage [`Lineage::Step`]), with
    /// the checks of any handoff (a loop bound, a dropped question) and
    /// `B`'s receipt. A refusal ends the branch ([`Branch::Rejected`], from
    /// [`finish`](Self::finish) on the returned turn); an accepted turn's
    /// body runs in the next round (readied at its start: [`ready`](Self::ready)).
    #[doc(hidden)] // for generated fork turns and hand-written workflows
    pub fn step<B: Agent<W>>(
        &mut self,
        fork: &mut ForkRun,
        handing: Handing,
        edge: u16,
        input: B::Input,
    ) -> Result<BranchTurn<'x, W, B>, RunError>
    where
        B::Input: Serialize,
    {
        handing.must_fan_out(self.transcript.run_id)?;
        let Handing {
            branch,
            start,
            depth,
            open,
            record,
            dissent,
            ..
        } = handing;
        let info = self.edge(edge, Node::End, false)?;
        if info.to != Node::Agent(B::INDEX) {
            return Err(RunError::Protocol(format!(
                "edge {edge} does not lead to agent `{}`",
                agent_name::<W>(B::INDEX)
            )));
        }
        // The sender's scope (set by `finish`) is recorded with the transfer.
        let at = self.transcript.len() as u32;
        let refused = self.record_input::<B>(edge, info, &input, Status::Pending)?;
        self.transcript.lineage.push((
            at,
            Lineage::Step {
                fork: fork.at,
                branch,
                parent: start,
            },
        ));
        if let Some(head) = fork.heads.get_mut(branch as usize) {
            *head = at;
        }
        self.keep_turn(at, record);
        let dropped = dissent
            .filter(|d| !d.carried_by(B::contract(&input).as_ref()))
            .map(|d| RejectReason::VerdictDropped {
                fork: d.fork,
                verdicts: d.verdicts,
            });
        let sender: Vec<RejectReason> = refused
            .into_iter()
            .chain(self.take_edge(edge, info))
            .chain(dropped)
            .collect();
        let mut turn = BranchTurn::new(branch, at, None);
        turn.depth = depth.saturating_add(1);
        self.open = open;
        self.receive_in_branch(fork, &mut turn, input, sender)?;
        Ok(turn)
    }

    /// Readies an accepted branch's body: its own turn log (its spending
    /// pooled with its siblings', `recorded` calls served), its journal
    /// bound to `anchor` (its start's hash) under the sequence number its
    /// outcome will take, its hop, its span.
    pub(super) fn start_body<A: Agent<W>>(
        &mut self,
        fork: &mut ForkRun,
        turn: &mut BranchTurn<'x, W, A>,
        input: A::Input,
        mut owned: OwnedTurn<'x>,
        anchor: Arc<str>,
        recorded: Option<crate::ledger::RecordedCalls>,
    ) {
        #[cfg(feature = "tracing")]
        let (branch, start) = (turn.branch, turn.start);
        // The calls served to the branch: its own journal (a resumed
        // branch), or the run's (a replay serves every branch from the
        // record, keyed by the outcome each branch's turn takes).
        let recorded = recorded.or_else(|| self.shared.recorded.clone());
        let shared = self.branch_shared(fork, recorded);
        if let Some(d) = &turn.dissent {
            shared.lock().disagreement = Some(d.clone());
            shared.mark();
        }
        owned.shared = shared.clone();
        owned.turn.turn_seq = fork.next_outcome;
        if let Some(journal) = owned.turn.journal.as_mut() {
            journal.anchor = anchor;
        }
        if A::HAS_POST && A::POST_READS_CONTEXT {
            turn.post_view = Some(Box::new(owned.clone()));
        }
        let cx = Context::new(
            self.root,
            self.deps,
            TurnRef::Owned(std::sync::Arc::new(owned)),
        );
        fork.next_outcome = fork.next_outcome.saturating_add(1);
        self.hops += 1;
        #[cfg(feature = "tracing")]
        {
            let name = agent_name::<W>(A::INDEX);
            turn.span = tracing::info_span!(
                parent: &fork.span,
                "invoke_agent",
                otel.name = %format_args!("invoke_agent {name}"),
                otel.kind = "internal",
                gen_ai.operation.name = "invoke_agent",
                gen_ai.agent.name = name,
                gen_ai.agent.id = A::INDEX,
                gen_ai.conversation.id = self.transcript.run_id,
                workflow.hop = self.hops.saturating_sub(1),
                workflow.seq = start,
                workflow.branch = branch,
            );
        }
        turn.shared = Some(shared);
        turn.state = BranchState::Ready {
            input,
            cx,
            limit: self.turn_limit::<A>(),
        };
    }

    /// A failed check on a branch's last transfer: in audit mode (for a
    /// reason that can be audited) kept for its receipt, `None`; otherwise
    /// the transfer is recorded rejected and the reason returned.
    fn branch_verdict(&mut self, reason: RejectReason) -> Result<Option<RejectReason>, RunError> {
        if self.limits.mode == crate::spec::Mode::Audit && reason.auditable() {
            self.audited.push(reason);
            return Ok(None);
        }
        let i = self.transcript.len().saturating_sub(1);
        self.audited.clear();
        self.transcript.note(
            i,
            crate::spec::Receipt::Rejected {
                reason: reason.clone(),
            },
        );
        self.receipt_decided();
        self.commit_last()?;
        Ok(Some(reason))
    }

    /// The shared state of one branch's turn: the run's, with a turn log of
    /// its own whose spending counts against the run's budget together with
    /// its siblings'.
    fn branch_shared(
        &self,
        fork: &ForkRun,
        recorded: Option<crate::ledger::RecordedCalls>,
    ) -> Arc<RunShared> {
        let edge_uses = self
            .shared
            .edge_uses
            .iter()
            .map(|u| {
                std::sync::atomic::AtomicU32::new(u.load(std::sync::atomic::Ordering::Relaxed))
            })
            .collect();
        Arc::new(RunShared {
            run_id: self.transcript.run_id,
            max_hops: self.max_hops,
            deadline: self.deadline(),
            mode: self.limits.mode,
            budget: self.limits.budget,
            revocations: self.limits.revocations.cloned(),
            model: self.limits.model.cloned(),
            lease: self.shared.lease.clone(),
            edge_uses,
            transfers: std::sync::OnceLock::from(self.shared.shared_copy().clone()),
            // The leases revoked so far hold in every branch; what a branch
            // does with leases is its own until it is settled.
            leases: std::sync::Mutex::new(self.shared.leases().for_branch()),
            leases_used: std::sync::atomic::AtomicBool::new(
                self.shared
                    .leases_used
                    .load(std::sync::atomic::Ordering::Acquire),
            ),
            log: std::sync::Mutex::new(TurnLog {
                spent_before: fork.spent,
                pool: Some(fork.pool.clone()),
                ..Default::default()
            }),
            recorded,
            ..RunShared::default()
        })
    }

    /// Records what branch `turn` ended with and returns it typed: its
    /// output (`output` takes it out of the agent's `Next`, `contract` is
    /// its contract when it is a handoff) handed to the join over the
    /// branch's outcome edge, or why not. The transfer-wide checks and the
    /// uncertainty rule apply to the output as to any transfer; a turn that
    /// failed is recorded as a failed turn is (its input again, `turn_failed`).
    /// Neither stops the run: the join sees the branch as it ended. An error
    /// is returned only when the run cannot go on (its ledger failed).
    #[doc(hidden)] // for generated fork turns and hand-written workflows
    pub fn settle<A: Agent<W>, O: Serialize + serde::de::DeserializeOwned>(
        &mut self,
        fork: &mut ForkRun,
        turn: BranchTurn<'x, W, A>,
        output: impl FnOnce(A::Next) -> O,
        contract: fn(&O) -> Option<ContractView<'_>>,
    ) -> Result<Branch<O>, RunError> {
        match self.finish(fork, turn)? {
            Finished::Ran(next, handing) => {
                let Some(edge) = fork.edges(handing.branch).map(|b| b.outcome) else {
                    return Err(RunError::Protocol(format!(
                        "fan-out of agent `{}` has no branch {}",
                        agent_name::<W>(fork.fork.from),
                        handing.branch
                    )));
                };
                self.hand_to_join(fork, handing, edge, output(next), contract)
            }
            Finished::Ended(ended) => Ok(ended.retyped()),
            Finished::Recorded { branch, seq, .. } => {
                self.settle_recorded::<A, O>(fork, branch, seq)
            }
        }
    }

    /// Ends branch `turn`: what its body returned, checked as a turn's
    /// output is ([`Finished::Ran`], for the caller to hand on to the join
    /// or to the branch's next agent), or why it ended without handing
    /// anything on, recorded ([`Finished::Ended`]), or, in a resumed
    /// fan-out, the record of what it handed on ([`Finished::Recorded`]).
    /// An error only when the run cannot go on (its ledger failed).
    #[doc(hidden)] // for generated fork turns and hand-written workflows
    pub fn finish<A: Agent<W>>(
        &mut self,
        fork: &mut ForkRun,
        turn: BranchTurn<'x, W, A>,
    ) -> Result<Finished<A::Next>, RunError> {
        let BranchTurn {
            branch,
            start,
            depth,
            state,
            scope,
            open,
            dissent,
            shared,
            post_view,
            ..
        } = turn;
        let ran = match state {
            BranchState::Refused(reason) => {
                return Ok(Finished::Ended(Branch::Rejected { reason }));
            }
            BranchState::Recorded { seq, .. } => {
                let Some(entry) = self.transcript.entries.get(seq as usize) else {
                    return Err(RunError::Protocol(format!(
                        "branch {branch}'s record #{seq} is not in the transcript"
                    )));
                };
                let edge = entry.edge;
                // A turn that failed is recorded as its input again (over
                // the edge it was handed on): it ended the branch.
                if let Some(crate::spec::Receipt::TurnFailed { error }) =
                    self.transcript.receipt(seq as usize)
                {
                    if let Some(head) = fork.heads.get_mut(usize::from(branch)) {
                        *head = seq;
                    }
                    self.carry_unresolved(fork, seq);
                    return Ok(Finished::Ended(self.failed_outcome::<A, Infallible>(error)));
                }
                return Ok(Finished::Recorded {
                    branch,
                    depth,
                    seq,
                    edge,
                });
            }
            BranchState::Ran(ran) => Ok(ran),
            BranchState::Cancelled(reason) => Err(reason),
            BranchState::Ready { .. } | BranchState::Running | BranchState::Accepted { .. } => {
                return Err(RunError::Protocol(format!(
                    "branch {branch} (`{}`) was settled before its body ran (call `ready` and `run_branches` first)",
                    agent_name::<W>(A::INDEX)
                )));
            }
        };
        let Some(shared) = shared else {
            return Err(RunError::Protocol("an accepted branch has no log".into()));
        };
        // The post-conditions are checked before the turn's log is taken,
        // those that read a context on the body's view of its turn (as a
        // sequential turn's are); their outcome is applied in its place
        // below.
        let (root, deps) = (self.root, self.deps);
        let post = match &ran {
            Ok(Some(Ok(next))) => check_post::<W, A>(next, || match post_view.as_deref() {
                Some(view) => Context::new(root, deps, view.lend()),
                // `start_body` keeps it for every agent whose conditions
                // read one; without it, a view made now.
                None => {
                    let mut owned = self.owned_turn::<A>(scope);
                    owned.shared = shared.clone();
                    Context::new(root, deps, TurnRef::Owned(std::sync::Arc::new(owned)))
                }
            }),
            _ => Ok(()),
        };
        // Its payload bytes, released before the records that follow.
        drop(post_view);
        // A turn that fanned out before the crash, run again.
        let fanned = fork
            .resume
            .as_ref()
            .and_then(|r| r.nested.iter().find(|n| n.at == start))
            .and_then(|n| n.starts.first())
            .map(|(seq, _)| *seq);
        self.turn_input = start as usize;
        self.turn.scope = scope;
        // The branch's lease acts go into its turn's record, and what it
        // revoked holds for the rest of the run.
        let leases = if shared
            .leases_used
            .load(std::sync::atomic::Ordering::Acquire)
        {
            let mut book = shared.leases();
            let (acts, _renewed) = book.end_turn();
            if self.shared.leases().absorb(&book) {
                self.shared.mark_leases();
            }
            acts
        } else {
            Vec::new()
        };
        let (record, failure) = crate::run::runtime::take_turn::<W, A>(
            &shared,
            start as usize,
            &mut self.spent,
            leases,
        );
        let parent = Lineage::Outcome {
            fork: fork.at,
            branch,
            parent: start,
        };
        let ran = match ran {
            Ok(ran) => ran,
            // Dropped unfinished under a quorum: recorded as a failed turn
            // is, its outcome `Cancelled`.
            Err(reason) => {
                let record = self.with_journaled::<A>(record, &shared, start);
                self.settle_failed(start, record, parent, &format!("cancelled: {reason}"))?;
                if let Some(head) = fork.heads.get_mut(branch as usize) {
                    *head = (self.transcript.len() - 1) as u32;
                }
                return Ok(Finished::Ended(Branch::Cancelled { reason }));
            }
        };
        let failed = |error: RunError| Branch::Failed {
            error: error.to_string(),
        };
        let ended: Result<A::Next, (Branch<Infallible>, RunError)> =
            if let Some((error, then)) = failure {
                // Under `escalate` too: nobody can be waited for inside a
                // fan-out, so the branch fails with the tool's error.
                let _: Then = then;
                let agent = agent_name::<W>(A::INDEX);
                let error = RunError::ToolFailed { agent, error };
                Err((failed(error.clone()), error))
            } else {
                match ran {
                    None => {
                        let error = self.branch_timeout::<A>();
                        let outcome = match &error {
                            RunError::Timeout { after_ms, .. } => Branch::TimedOut {
                                after_ms: *after_ms,
                            },
                            other => Branch::Cancelled {
                                reason: other.to_string(),
                            },
                        };
                        Err((outcome, error))
                    }
                    Some(result) => self.branch_result::<A, Infallible>(result, post),
                }
            };
        match ended {
            Ok(next) => Ok(Finished::Ran(
                next,
                Handing {
                    branch,
                    start,
                    depth,
                    agent: agent_name::<W>(A::INDEX),
                    open,
                    record,
                    dissent,
                    fanned,
                },
            )),
            Err((_, error)) if fanned.is_some() => Err(RunError::Resume(format!(
                "run {}: the turn of branch {branch} that worked on #{start} fanned out before the crash and, run again, failed ({error}): it did not repeat itself",
                self.transcript.run_id
            ))),
            Err((outcome, error)) => {
                self.settle_failed(start, record, parent, &error.to_string())?;
                if let Some(head) = fork.heads.get_mut(branch as usize) {
                    *head = (self.transcript.len() - 1) as u32;
                }
                Ok(Finished::Ended(outcome))
            }
        }
    }

    /// The record of a resumed branch turn a quorum cut (`record`, what it
    /// logged): with the calls journaled for it that it did not make again.
    /// Cut before it got as far as its first run, when the branches read
    /// back already reach the quorum, it made those calls before that run
    /// cut it: its record holds them as that run's did.
    fn with_journaled<A: Agent<W>>(
        &self,
        mut record: Option<TurnRecord>,
        shared: &RunShared,
        start: u32,
    ) -> Option<TurnRecord> {
        let Some(recorded) = &shared.recorded else {
            return record;
        };
        let made = record.as_ref().map_or(0, |r| r.tool_calls.len()) as u32;
        let rest = recorded.journaled_from(self.transcript.len() as u32, made);
        if rest.is_empty() {
            return record;
        }
        record
            .get_or_insert_with(|| TurnRecord {
                leases: Vec::new(),
                agent: std::borrow::Cow::Borrowed(agent_name::<W>(A::INDEX)),
                input_seq: start,
                tool_calls: Vec::new(),
                model_calls: Vec::new(),
                usage: Usage::default(),
                unresolved: Vec::new(),
            })
            .tool_calls
            .extend(rest);
        record
    }

    /// Records what a branch's last turn handed on (`handing`, from
    /// [`finish`](Self::finish)): `value` to the join over `edge`, the
    /// branch's outcome, returned typed. The transfer-wide checks and the
    /// uncertainty rule apply to it as to any transfer; a refusal is the
    /// branch's outcome ([`Branch::Rejected`]).
    #[doc(hidden)] // for generated fork turns and hand-written workflows
    pub fn hand_to_join<O: Serialize>(
        &mut self,
        fork: &mut ForkRun,
        handing: Handing,
        edge: u16,
        value: O,
        contract: fn(&O) -> Option<ContractView<'_>>,
    ) -> Result<Branch<O>, RunError> {
        handing.must_fan_out(self.transcript.run_id)?;
        let Handing {
            branch,
            start,
            agent,
            mut open,
            mut record,
            mut dissent,
            ..
        } = handing;
        let parent = Lineage::Outcome {
            fork: fork.at,
            branch,
            parent: start,
        };
        let info = self.edge(edge, Node::End, false)?;
        if W::GRAPH.edges.get(fork.fork.join as usize).map(|e| e.to) != Some(info.to) {
            return Err(RunError::Protocol(format!(
                "edge {edge} does not lead to the join of the fan-out of `{}`",
                agent_name::<W>(fork.fork.from)
            )));
        }
        let at = self.transcript.len() as u32;
        let refused = self.record(edge, info, &value, Status::Pending)?;
        self.transcript.lineage.push((at, parent));
        if let Some(head) = fork.heads.get_mut(branch as usize) {
            *head = at;
        }
        let contract = contract(&value);
        let mut reasons: Vec<RejectReason> = refused.into_iter().collect();
        // An output that is not a handoff cannot carry a nested join's
        // disagreement either: its question goes on as an open one does.
        if contract.is_none()
            && let Some(d) = dissent.take()
        {
            open.push(d.question());
        }
        if contract.is_none() && !open.is_empty() {
            // An output that is not a handoff cannot carry the questions:
            // they go to the join's turn, recorded with this branch's turn.
            let record = record.get_or_insert_with(|| TurnRecord {
                leases: Vec::new(),
                agent: std::borrow::Cow::Borrowed(agent),
                input_seq: start,
                tool_calls: Vec::new(),
                model_calls: Vec::new(),
                usage: Usage::default(),
                unresolved: Vec::new(),
            });
            record.unresolved.clone_from(&open);
            for q in open {
                if !fork.carried.contains(&q) {
                    fork.carried.push(q);
                }
            }
        } else {
            self.open = open;
            if let Some(question) = self.dropped_question(contract.as_ref()) {
                reasons.push(RejectReason::UncertaintyDropped { question });
            }
        }
        self.keep_turn(at, record);
        if let Some(d) = dissent.filter(|d| !d.carried_by(contract.as_ref())) {
            reasons.push(RejectReason::VerdictDropped {
                fork: d.fork,
                verdicts: d.verdicts,
            });
        }
        reasons.extend(self.transfer_verdicts(contract.as_ref(), !self.limits.mode.is_enforce()));
        for reason in reasons {
            if let Some(refusal) = self.branch_verdict(reason)? {
                return Ok(Branch::Rejected { reason: refusal });
            }
        }
        self.accept_last();
        self.commit_last()?;
        self.receipt_decided();
        Ok(Branch::Done(value))
    }

    /// What a branch's body returned, checked as a turn's output is: a
    /// spent budget, the body's error, the run's deadline, the
    /// post-conditions (`post`, checked before the turn's log was taken).
    /// `Err` with the branch's outcome and the error its record states.
    // A large `Err`, once per failed branch: not worth a box.
    #[allow(clippy::result_large_err)]
    fn branch_result<A: Agent<W>, O>(
        &mut self,
        result: Result<A::Next, Reject>,
        post: Result<(), &'static crate::spec::Condition>,
    ) -> Result<A::Next, (Branch<O>, RunError)> {
        let agent = agent_name::<W>(A::INDEX);
        let failed = |error: RunError| {
            let outcome = Branch::Failed {
                error: error.to_string(),
            };
            (outcome, error)
        };
        if let Some((budget, limit, spent)) =
            self.limits.budget.and_then(|b| b.over(&self.spent, false))
        {
            return Err(failed(RunError::BudgetExhausted {
                agent,
                budget,
                limit,
                spent,
            }));
        }
        let next = match result {
            Ok(next) => next,
            Err(reject) if reject.is_escalation() => {
                let reason = Escalation::Requested {
                    question: reject.reason().to_owned(),
                };
                return Err(failed(RunError::AgentFailed {
                    agent,
                    error: Reject::because(format!(
                        "{reason}; a branch of a fan-out cannot wait for a person's decision"
                    )),
                }));
            }
            Err(error) => return Err(failed(RunError::AgentFailed { agent, error })),
        };
        if let Some(after_ms) = self.limits.deadline_ms
            && self.elapsed_ms() >= after_ms
        {
            let error = RunError::DeadlinePassed { agent, after_ms };
            let outcome = Branch::Cancelled {
                reason: error.to_string(),
            };
            return Err((outcome, error));
        }
        if let Err(c) = post {
            crate::observe::telemetry::post_condition_failed::<W, A>(c);
            return Err(failed(RunError::PostCondition {
                agent,
                condition: c.expr,
                message: c.message,
            }));
        }
        Ok(next)
    }

    /// Why a branch's body was cut: the run's deadline, or its own timeout.
    fn branch_timeout<A: Agent<W>>(&self) -> RunError {
        let agent = agent_name::<W>(A::INDEX);
        match self.limits.deadline_ms {
            Some(after_ms) if self.elapsed_ms() >= after_ms => {
                RunError::DeadlinePassed { agent, after_ms }
            }
            _ => RunError::Timeout {
                agent,
                after_ms: A::TIMEOUT.map_or(0, |t| t.as_millis() as u64),
            },
        }
    }

    /// Records a branch's failed turn: its input again, `turn_failed` with
    /// `error`, with the turn's record and its place in the fan-out.
    fn settle_failed(
        &mut self,
        start: u32,
        turn: Option<TurnRecord>,
        lineage: Lineage,
        error: &str,
    ) -> Result<(), RunError> {
        let Some(entry) = self.transcript.entries.get(start as usize).cloned() else {
            return Err(RunError::Protocol(
                "a branch's input is not recorded".into(),
            ));
        };
        let bytes = self
            .transcript
            .payload_bytes(start as usize)
            .unwrap_or_default()
            .to_vec();
        let i = self.push_redelivery(entry.edge, entry.format, &bytes)?;
        self.transcript.lineage.push((i as u32, lineage));
        if let Some(turn) = turn {
            self.transcript.turns.push((i as u32, turn));
        }
        self.transcript.note(
            i,
            crate::spec::Receipt::TurnFailed {
                error: error.to_owned(),
            },
        );
        self.handoff_event();
        self.commit_last()
    }

    /// Records the join's transfer: `joined` (every branch's outcome, in
    /// branch order) from the fan-out agent to the join agent `J`, its
    /// receipt pending. `J`'s turn then starts as any turn does, with the
    /// questions the branches left open to carry forward.
    #[doc(hidden)] // for generated fork turns and hand-written workflows
    pub fn join<J: Agent<W>>(&mut self, fork: ForkRun, joined: &J::Input) -> Result<(), RunError>
    where
        J::Input: Serialize,
    {
        let info = self.edge(fork.fork.join, Node::End, false)?;
        if info.to != Node::Agent(J::INDEX) || info.from != Node::Agent(fork.fork.from) {
            return Err(RunError::Protocol(format!(
                "the join of the fan-out of `{}` does not lead to agent `{}`",
                agent_name::<W>(fork.fork.from),
                agent_name::<W>(J::INDEX)
            )));
        }
        self.turn.scope = fork.scope;
        self.turn_input = fork.at as usize;
        let at = self.transcript.len() as u32;
        let refused = self.record_input::<J>(fork.fork.join, info, joined, Status::Pending)?;
        self.transcript.lineage.push((
            at,
            Lineage::Join {
                fork: fork.at,
                heads: fork.heads.clone(),
            },
        ));
        self.joined_open = fork.carried;
        self.note_verdicts::<J>(fork.fork, fork.at, &fork.heads, joined);
        if let Some(reason) = refused {
            self.verdict(reason)?;
        }
        Ok(())
    }
}
