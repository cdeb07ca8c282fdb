//! What an agent sees during its turn (`Context`) and what its turns share
//! with the run: the turn's log and the budgets.

use crate::spec::RejectReason;
use crate::spec::ToolError;
use crate::spec::agent_name;
use crate::spec::{Authority, Expiry, Lease, Payload};
use crate::spec::{BudgetExhausted, Usage};
use crate::spec::{Then, ToolCallRecord};
use std::marker::PhantomData;
use std::sync::Arc;

use crate::run::{CallSite, ToolCall, ToolLoop, Toolset, call_tool};
use crate::spec::{Agent, Granted, Tool, Workflow};
/// What an agent sees during its turn: the pinned invariants, its granted
/// tools and its owned authorities, nothing else.
pub struct Context<'x, W: Workflow, A> {
    pub(crate) root: &'x W::Root,
    pub(crate) deps: &'x W::Deps,
    /// The turn (its hop, scope, records and journal) and the run's state
    /// it reads: lent by the runtime, or owned (see [`TurnRef`]).
    pub(crate) run: TurnRef<'x>,
    pub(crate) earlier: EarlierCache<Vec<crate::run::EarlierTurn<W, A>>>,
    pub(crate) agent: PhantomData<fn() -> A>,
}

/// A context's earlier turns, read once when first asked for. Dropped by a
/// call only when they were read: the drop of a context that never asked
/// (nearly every one) is a test, not a call (measured: about 7
/// instructions a transition).
pub(crate) struct EarlierCache<T>(pub(crate) once_cell::race::OnceBox<T>);

impl<T> Drop for EarlierCache<T> {
    #[inline(always)]
    fn drop(&mut self) {
        if self.0.get().is_some() {
            drop_read(std::mem::replace(
                &mut self.0,
                once_cell::race::OnceBox::new(),
            ));
        }
    }
}

/// Drops earlier turns a context read.
#[inline(never)]
fn drop_read<T>(read: once_cell::race::OnceBox<T>) {
    drop(read);
}

/// What a context knows of its turn: kept by the runtime for the turn that
/// runs (and lent to its context), or owned by a fan-out branch's context.
#[derive(Clone, Default)]
pub(crate) struct TurnView<'x> {
    /// The hop the turn runs at.
    pub(crate) hop: u32,
    /// The transfer record that granted the turn's scope (its lease's id
    /// with the run's).
    pub(crate) lease_seq: u32,
    /// The sequence number the record of this turn's outcome takes (its
    /// handoff, or the record of its failure): with the call's index, what
    /// identifies a tool call of the run.
    pub(crate) turn_seq: u32,
    /// How many of the run's recorded agent turns this context may see (0: the
    /// agent has none); its own view of them is built on first request.
    pub(crate) earlier_upto: u32,
    /// The scope of the handoff the agent works under (`None` for the
    /// workflow input, which delegates nothing).
    pub(crate) scope: Option<(&'static str, Expiry)>,
    /// Where each tool call's outcome is journaled before the agent sees it
    /// (the run's ledger), so that a resumed turn does not repeat it.
    pub(crate) journal: Option<Journal<'x>>,
}

/// A context's turn and the run's state it reads: the [`TurnView`], the
/// run's shared state (the turn's log, the budgets) and its transfers
/// with their payload bytes (what its earlier turns and lease chains are
/// read from, without a copy).
///
/// A turn's context borrows them from the runtime for the turn (the
/// generated loop's turns and `Runtime::turn`): the runtime changes none of
/// them while the body runs, nothing is counted in or out, and the context
/// stays small to move. A fan-out branch's context is kept while the
/// runtime records its siblings, so it owns them, in one allocation.
pub(crate) enum TurnRef<'x> {
    /// Borrowed from the runtime for the turn.
    Lent {
        turn: &'x TurnView<'x>,
        shared: &'x Arc<RunShared>,
        transcript: &'x crate::run::Transcript,
    },
    /// Held by the context (a branch's, a canary's). An `Arc`, not a
    /// `Box`: its drop is a test and a decrement, small enough to be
    /// inlined where every turn's context is dropped (a `Box`'s, with the
    /// turn's own drop in it, was a call a transition).
    Owned(Arc<OwnedTurn<'x>>),
    /// Borrowed from a branch's owned turn for a context that lives
    /// shorter (its pre- or post-conditions').
    Borrowed(&'x OwnedTurn<'x>),
}

/// What an owned [`TurnRef`] holds: the run's transfers are read from the
/// shared state's copy ([`RunShared::transfers`]), their payload bytes
/// from a share of the run's as they stood when the turn started (`None`
/// when the agent has no earlier turns).
#[derive(Clone)]
pub(crate) struct OwnedTurn<'x> {
    pub(crate) turn: TurnView<'x>,
    pub(crate) shared: Arc<RunShared>,
    pub(crate) payloads: Option<crate::run::SharedPayloads>,
}

impl<'x> TurnRef<'x> {
    /// The turn.
    #[inline]
    pub(crate) fn turn(&self) -> &TurnView<'x> {
        match self {
            TurnRef::Lent { turn, .. } => turn,
            TurnRef::Owned(owned) => &owned.turn,
            TurnRef::Borrowed(owned) => &owned.turn,
        }
    }

    /// The turn and the run's shared state, from one look at where they
    /// are.
    #[inline]
    pub(crate) fn turn_and_shared(&self) -> (&TurnView<'x>, &Arc<RunShared>) {
        match self {
            TurnRef::Lent { turn, shared, .. } => (turn, shared),
            TurnRef::Owned(owned) => (&owned.turn, &owned.shared),
            TurnRef::Borrowed(owned) => (&owned.turn, &owned.shared),
        }
    }

    /// The run's shared state (an `Arc`, for what keeps it past the
    /// context: a model call's).
    #[inline]
    pub(crate) fn shared(&self) -> &Arc<RunShared> {
        match self {
            TurnRef::Lent { shared, .. } => shared,
            TurnRef::Owned(owned) => &owned.shared,
            TurnRef::Borrowed(owned) => &owned.shared,
        }
    }

    /// The run's payload bytes as they stood when the turn started.
    pub(crate) fn payloads(&self) -> Option<crate::run::PayloadsRef<'_>> {
        use crate::run::PayloadsRef;
        match self {
            TurnRef::Lent { transcript, .. } => Some(PayloadsRef::Run(&transcript.bytes)),
            TurnRef::Owned(owned) => owned.payloads.as_ref().map(PayloadsRef::Shared),
            TurnRef::Borrowed(owned) => owned.payloads.as_ref().map(PayloadsRef::Shared),
        }
    }

    /// `read` on the run's transfers: the transcript a turn borrows, or for
    /// a fan-out branch the copy shared with the branches (under its lock),
    /// which holds every record made so far (`keep_branches_current`).
    /// What a context reads is bounded by its view (its earlier turns, its
    /// own lease's chain), except who granted a lease it names.
    pub(crate) fn with_transfers<R>(&self, read: impl FnOnce(crate::run::Transfers<'_>) -> R) -> R {
        self.shared().with_transfers(self.transcript(), read)
    }

    /// The transcript the turn borrows, when it does (`None` for a
    /// branch's: see [`with_transfers`](Self::with_transfers)).
    pub(crate) fn transcript(&self) -> Option<&'x crate::run::Transcript> {
        match self {
            TurnRef::Lent { transcript, .. } => Some(transcript),
            TurnRef::Owned(_) | TurnRef::Borrowed(_) => None,
        }
    }
}

impl<'x> OwnedTurn<'x> {
    /// Lent to a context that lives shorter than this (a pre- or
    /// post-condition's on a branch).
    pub(crate) fn lend(&self) -> TurnRef<'_> {
        TurnRef::Borrowed(self)
    }
}

impl Clone for TurnRef<'_> {
    fn clone(&self) -> Self {
        match self {
            TurnRef::Lent {
                turn,
                shared,
                transcript,
            } => TurnRef::Lent {
                turn,
                shared,
                transcript,
            },
            TurnRef::Owned(owned) => TurnRef::Owned(owned.clone()),
            TurnRef::Borrowed(owned) => TurnRef::Borrowed(owned),
        }
    }
}

/// Where a turn's tool calls are journaled: the run's ledger, and the hash
/// of the record the turn works on, which each entry is bound to.
#[derive(Clone)]
pub(crate) struct Journal<'x> {
    pub(crate) ledger: &'x dyn crate::ledger::Ledger,
    pub(crate) anchor: Arc<str>,
}

/// What a run's turns share with the executor: the log of the current
/// turn (tool calls, usage, failures) and the budgets.
#[derive(Default)]
pub(crate) struct RunShared {
    /// The run's id.
    pub(crate) run_id: u64,
    /// The run's hop cap.
    pub(crate) max_hops: u32,
    /// When the run's deadline passes (`None`: no deadline).
    pub(crate) deadline: Option<std::time::Instant>,
    /// The executor's mode: in audit mode a call outside the turn's scope
    /// is made and recorded as a verdict instead of refused.
    pub(crate) mode: crate::spec::Mode,
    pub(crate) budget: Option<crate::spec::Budget>,
    /// The leases revoked (`Executor::revoke`).
    pub(crate) revocations: Option<Arc<crate::spec::Revocations>>,
    /// The model `cx.generate` asks (`Executor::with_model`).
    pub(crate) model: Option<Arc<dyn crate::llm::Model>>,
    /// Set once anything is logged, so that a turn without tool calls or
    /// charges costs one atomic load.
    pub(crate) dirty: std::sync::atomic::AtomicBool,
    pub(crate) log: std::sync::Mutex<TurnLog>,
    /// Tool calls already recorded (a replay, or a turn cut by a crash),
    /// served instead of calling the tools again.
    pub(crate) recorded: Option<crate::ledger::RecordedCalls>,
    /// The run's lease: tool calls are journaled under it.
    pub(crate) lease: Option<Arc<crate::ledger::Lease>>,
    /// Handoffs made over each edge of the graph (by edge index), counted
    /// for the edges with a loop bound: what an agent reads as the uses it
    /// has left.
    /// Inline for a graph of up to eight edges (one allocation a run less).
    pub(crate) edge_uses: smallvec::SmallVec<[std::sync::atomic::AtomicU32; 8]>,
    /// The run's transfers as a fan-out's branches read them (a copy,
    /// brought up to date when a branch's context is made; empty in a run
    /// that never fans out), shared with the branches' own states; made
    /// on first use (a run that never fans out allocates none).
    pub(crate) transfers: std::sync::OnceLock<SharedCopy>,
    /// The leases revoked in the run, the current turn's renewal and lease
    /// acts (`run/lease_book.rs`).
    pub(crate) leases: std::sync::Mutex<crate::run::LeaseBook>,
    /// Set once the lease book holds anything: until then a lease check
    /// costs one atomic load.
    pub(crate) leases_used: std::sync::atomic::AtomicBool,
}

/// The copy of the run's transfers its fan-out branches read.
pub(crate) type SharedCopy = Arc<std::sync::Mutex<crate::run::SharedTransfers>>;

/// The log of the current turn.
#[derive(Default)]
pub(crate) struct TurnLog {
    pub(crate) next_call: u32,
    pub(crate) calls: Vec<ToolCallRecord>,
    pub(crate) usage: Usage,
    /// Spent by the run before this turn.
    pub(crate) spent_before: Usage,
    /// The first call that failed under its fallback policy (boxed, as
    /// `returned`: rare, and the shared state is allocated for every run).
    pub(crate) failure: Option<Box<(ToolError, Then)>>,
    /// The rejection this turn's earlier handoff got back, when the turn
    /// runs again because of it.
    pub(crate) returned: Option<Box<Returned>>,
    /// The person who approved this turn's input at an escalation.
    pub(crate) approval: Option<Approval>,
    pub(crate) next_model_call: u32,
    pub(crate) model_calls: Vec<crate::spec::ModelCallRecord>,
    /// In a branch of a fan-out: what every branch of the fan-out has spent
    /// so far (this one included), so that the run's budgets are checked
    /// against all of them at once.
    pub(crate) pool: Option<Arc<std::sync::Mutex<Usage>>>,
    /// At a join: the disagreement among its branches' verdicts, which the
    /// turn's handoff must carry forward.
    pub(crate) disagreement: Option<crate::spec::Disagreement>,
}

impl TurnLog {
    /// What the run has spent: before this turn, and in it (and, in a
    /// branch, in its sibling branches).
    pub(crate) fn spent(&self) -> Usage {
        let mut spent = self.spent_before;
        match &self.pool {
            None => spent.add(&self.usage),
            Some(pool) => spent.add(&pool.lock().unwrap_or_else(|p| p.into_inner())),
        }
        spent
    }

    /// Charges `usage` to this turn (and to its fan-out's pool).
    pub(crate) fn add(&mut self, usage: &Usage) {
        self.usage.add(usage);
        if let Some(pool) = &self.pool {
            pool.lock().unwrap_or_else(|p| p.into_inner()).add(usage);
        }
    }
}

impl RunShared {
    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, TurnLog> {
        // A panic in another task holding the lock leaves a log that is
        // still consistent (every write is one push or one add).
        self.log.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn transfers(&self) -> std::sync::MutexGuard<'_, crate::run::SharedTransfers> {
        // Every write is one append: a panic elsewhere leaves it consistent.
        self.shared_copy().lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The branches' copy of the run's transfers, made on first use.
    pub(crate) fn shared_copy(&self) -> &SharedCopy {
        self.transfers.get_or_init(SharedCopy::default)
    }

    /// Whether a holder besides this state (a fan-out branch's) shares the
    /// copy of the run's transfers: it is then kept up to date.
    #[inline]
    pub(crate) fn copy_is_shared(&self) -> bool {
        self.transfers
            .get()
            .is_some_and(|copy| Arc::strong_count(copy) > 1)
    }

    /// `read` on the run's transfers: `transcript` when a turn borrows it,
    /// else (a fan-out branch's turn) the copy shared with the branches,
    /// under its lock.
    pub(crate) fn with_transfers<R>(
        &self,
        transcript: Option<&crate::run::Transcript>,
        read: impl FnOnce(crate::run::Transfers<'_>) -> R,
    ) -> R {
        match transcript {
            Some(transcript) => read(transcript.transfers()),
            None => read(self.transfers().view()),
        }
    }

    pub(crate) fn mark(&self) {
        self.dirty.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Charges `usage` to the current turn; past a budget it is an error.
    pub(crate) fn charge(&self, usage: Usage) -> Result<(), BudgetExhausted> {
        let mut log = self.lock();
        log.add(&usage);
        self.mark();
        let spent = log.spent();
        match self.budget.and_then(|b| b.over(&spent, false)) {
            Some((budget, limit, spent)) => Err(BudgetExhausted {
                budget,
                limit,
                spent,
            }),
            None => Ok(()),
        }
    }
}

/// A handoff returned to its sender: the receiver rejected it, and the
/// sender's turn runs again to handle the rejection.
#[derive(Debug, Clone, PartialEq)]
pub struct Returned {
    /// The receiver that rejected it.
    pub by: &'static str,
    /// Why.
    pub reason: RejectReason,
    /// How many times this receiver has returned a handoff in this run.
    pub times: u32,
}

/// A person's approval of an escalated transfer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approval {
    /// Who approved.
    pub by: String,
    /// Whether the payload was edited.
    pub edited: bool,
}

impl<'x, W: Workflow, A: Agent<W>> Context<'x, W, A> {
    /// The invariants pinned for this run.
    pub fn root(&self) -> &'x W::Root {
        self.root
    }

    /// The agent's own name.
    pub fn agent_name(&self) -> &'static str {
        agent_name::<W>(A::INDEX)
    }

    /// The authorities this agent owns.
    pub fn owned_authorities(&self) -> &'static [&'static str] {
        W::GRAPH
            .agents
            .get(A::INDEX as usize)
            .map_or(&[], |a| a.owns)
    }

    /// Agent turns completed before this one.
    pub fn hop(&self) -> u32 {
        self.run.turn().hop
    }

    /// The run's id.
    pub fn run_id(&self) -> u64 {
        self.run.shared().run_id
    }

    /// A lease on `authority` for the receiver of a handoff (which must
    /// own it), to be bounded before it is the scope the handoff's
    /// `#[authority]` part carries: `cx.lease(a).until_hop(n)`,
    /// `.until_unix_ms(ms)`, `.for_next_turn()`, or `.open_ended()` for an
    /// authority declared open-ended. At the receipt the lease must not
    /// outlive this turn's own scope nor the run (its hop cap, its
    /// deadline).
    pub fn lease<Au: Authority>(&self, authority: Au) -> Lease<Au> {
        // The turn and the run's state looked up once (measured: about 10
        // instructions a lease less than a lookup for each).
        let (turn, shared) = self.run.turn_and_shared();
        let mine = crate::run::lease_book::expires_of(turn, shared);
        Lease::granted(authority, turn.hop, mine, shared.max_hops)
    }

    /// A contract for a handoff asking for `op` under `authority`, with the
    /// defaults the runtime knows: the scope ends when this turn's own does
    /// ([`Lease::as_long_as_mine`]), the stop is at the workflow's bound
    /// (`MAX_HOPS`).
    /// Say the evidence and the open questions, then `build()`:
    /// `cx.contract(authority::Apply, op).evidence([e]).open([]).build()`.
    /// `.scope(..)` and `.stop(..)` replace the defaults.
    pub fn contract<Au: Authority>(
        &self,
        authority: Au,
        op: crate::spec::Operation,
    ) -> crate::spec::ContractBuilder<Au> {
        let scope = self.lease(authority).as_long_as_mine();
        crate::spec::contract_at::<Au>(op, scope, W::GRAPH.max_hops)
    }

    /// When this turn runs again because the receiver of its handoff
    /// returned it: who, and why. Handle it: sending the same payload again
    /// is rejected.
    pub fn returned(&self) -> Option<Returned> {
        self.run.shared().lock().returned.as_deref().cloned()
    }

    /// When this turn runs after a person approved its input at an
    /// escalation: who, and whether they edited it.
    pub fn approval(&self) -> Option<Approval> {
        self.run.shared().lock().approval.clone()
    }

    /// At a join whose branches gave different verdicts (`#[verdict]`): who
    /// said what, each with the citation of its branch's outcome record.
    /// The turn's handoff must carry it forward, as an open question
    /// ([`Disagreement::uncertainty`](crate::spec::Disagreement::uncertainty))
    /// or as evidence that weighed every branch
    /// ([`Disagreement::resolution`](crate::spec::Disagreement::resolution)),
    /// or it is rejected with `verdict_dropped`. `None` when the branches
    /// agree, or outside a join.
    pub fn disagreement(&self) -> Option<crate::spec::Disagreement> {
        self.run.shared().lock().disagreement.clone()
    }

    /// Charges `usage` (tokens, cost) to the run's budget. Past a budget it
    /// is an error; the run stops with
    /// [`RunError::BudgetExhausted`](crate::RunError::BudgetExhausted) at the end of the turn whatever the
    /// agent does with the error.
    pub fn charge(&self, usage: Usage) -> Result<(), BudgetExhausted> {
        self.run.shared().charge(usage)
    }

    /// Asks the run's model (`Executor::with_model`) for a `T`: the prompt
    /// goes out with `T`'s JSON Schema as the response format, and the
    /// reply comes back only as a `T` that matches it (see
    /// [`Generation`](crate::Generation): repairs, rules, budget).
    /// Every attempt's tokens are charged to the run's budget, and the call
    /// is recorded with the turn. With `?` a failure ends the turn.
    pub fn generate<T: Payload>(
        &self,
        prompt: impl Into<crate::llm::Prompt>,
    ) -> crate::run::Generation<'static, T> {
        let model = self.run.shared().model.clone();
        crate::run::Generation::shared(self.run.shared().clone(), model, prompt.into())
    }

    /// Hands the run's model a prompt and a set of this agent's granted
    /// tools (a tuple of tool values: `(tools::lookup, tools::write)`),
    /// and asks for a `T`: the model may ask for tool calls, step after
    /// step, until it answers with a `T` (see [`ToolLoop`](crate::ToolLoop):
    /// the step limit, the checks every requested call passes, the record).
    /// Offering a tool the agent is not granted does not compile.
    pub fn tool_loop<T: Payload>(
        &self,
        prompt: impl Into<crate::llm::Prompt>,
        tools: impl Toolset<W, A>,
    ) -> ToolLoop<'x, W, A, T> {
        ToolLoop::new(self.clone(), prompt.into(), tools)
    }

    /// Like [`generate`](Self::generate), asking `model` instead of the
    /// run's model.
    pub fn generate_with<'m, T: Payload>(
        &self,
        model: &'m dyn crate::llm::Model,
        prompt: impl Into<crate::llm::Prompt>,
    ) -> crate::run::Generation<'m, T> {
        crate::run::Generation::borrowed(self.run.shared().clone(), model, prompt.into())
    }

    /// What the run has spent so far, this turn included.
    pub fn spent(&self) -> Usage {
        self.run.shared().lock().spent()
    }

    /// This agent's earlier turns in this run, oldest first: for each
    /// transfer it made, the input it worked on and what it handed on
    /// (typed: [`EarlierTurn::input`](crate::EarlierTurn::input),
    /// [`EarlierTurn::output_to`](crate::EarlierTurn::output_to)). Empty on
    /// its first turn. Read from the record, so a resumed run and a replay
    /// see them too.
    pub fn earlier_turns(&self) -> &[crate::run::EarlierTurn<W, A>]
    where
        A: Agent<W>,
    {
        let Some(payloads) = self
            .run
            .payloads()
            .filter(|_| self.run.turn().earlier_upto > 0)
        else {
            return &[];
        };
        self.earlier.0.get_or_init(|| {
            Box::new(self.run.with_transfers(|transfers| {
                transfers.turns_of::<W, A>(self.run.turn().earlier_upto, payloads)
            }))
        })
    }

    /// Agent turns that may still run after this one before the run's hop
    /// cap (`Executor::with_max_hops`, by default the workflow's `MAX_HOPS`)
    /// stops it: 0 means a handoff from this turn is rejected at its
    /// receipt, so this turn should end the run if it can.
    pub fn hops_left(&self) -> u32 {
        self.run
            .shared()
            .max_hops
            .saturating_sub(self.run.turn().hop.saturating_add(1))
    }

    /// How many more handoffs this agent may make to agent `B` (its
    /// marker, `B::Agent`) over their bounded edge (`to = [b(max = N)]`):
    /// `Some(0)` means a `Next` to `B` is rejected as over the loop bound.
    /// `None` when the edge has no bound (or this agent has no edge to `B`,
    /// which its `Next` could not take anyway).
    pub fn uses_left<B: Agent<W>>(&self) -> Option<u32> {
        self.uses_left_at(|to| to == crate::spec::Node::Agent(B::INDEX))
    }

    /// [`uses_left`](Self::uses_left) by the receiver's name (`"END"` for
    /// the end of the run).
    pub fn uses_left_to(&self, receiver: &str) -> Option<u32> {
        self.uses_left_at(|to| match to {
            crate::spec::Node::Agent(i) => agent_name::<W>(i) == receiver,
            crate::spec::Node::End => receiver == "END",
            crate::spec::Node::Start => false,
        })
    }

    fn uses_left_at(&self, to: impl Fn(crate::spec::Node) -> bool) -> Option<u32> {
        let from = crate::spec::Node::Agent(A::INDEX);
        let (i, edge) = W::GRAPH
            .edges
            .iter()
            .enumerate()
            .find(|(_, e)| e.from == from && to(e.to))?;
        let bound = edge.bound?;
        let used = self
            .run
            .shared()
            .edge_uses
            .get(i)
            .map_or(0, |u| u.load(std::sync::atomic::Ordering::Relaxed));
        Some(bound.saturating_sub(used))
    }

    /// What is left of the run's budget, this turn's spending included:
    /// each limit the executor set (`Executor::with_budget`), less what the run
    /// has spent; a limit not set stays `None`. `None` when the run has no
    /// budget.
    pub fn budget_left(&self) -> Option<crate::spec::Budget> {
        let budget = self.run.shared().budget?;
        let spent = self.spent();
        Some(crate::spec::Budget {
            tokens: budget
                .tokens
                .map(|n| n.saturating_sub(spent.total_tokens())),
            cost_micros: budget
                .cost_micros
                .map(|n| n.saturating_sub(spent.cost_micros)),
            tool_calls: budget
                .tool_calls
                .map(|n| n.saturating_sub(spent.tool_calls)),
        })
    }

    /// The time left before the run's deadline (`Executor::with_deadline`)
    /// passes: zero once it has; `None` when the run has no deadline. A
    /// turn still running at the deadline is stopped.
    pub fn time_left(&self) -> Option<std::time::Duration> {
        self.run
            .shared()
            .deadline
            .map(|at| at.saturating_duration_since(std::time::Instant::now()))
    }

    /// Calls a tool this agent is granted.
    ///
    /// Before the call: the tool's authority must be the one the handoff
    /// delegates, not expired (or, for a turn under no handoff's scope, one
    /// this agent owns), and the tool-call budget must have room.
    /// After it: the result must pass the output's [`FailFast`](crate::FailFast) rule;
    /// transient failures are retried as the tool declares. Every call is
    /// recorded (arguments, result and its digest, outcome, attempts,
    /// duration) with the transfer its turn produces.
    pub fn call<T>(&self, tool: T, input: T::Input) -> ToolCall<'x, T::Output>
    where
        T: Tool<W>,
        A: Granted<T>,
    {
        self.call_granted(tool, input)
    }

    /// A call of a tool whose grant the caller's bounds have checked
    /// (`A: Granted<T>`): the one path of `cx.call` and of the calls a
    /// model asks for in a tool loop (`cx.tool_loop`), with its span, its
    /// metrics and every run-time check (scope, budget, guard, journal,
    /// retries, fail-fast, record).
    pub(crate) fn call_granted<T: Tool<W>>(
        &self,
        tool: T,
        input: T::Input,
    ) -> ToolCall<'x, T::Output> {
        #[cfg(feature = "tracing")]
        let span = tracing::info_span!(
            "execute_tool",
            otel.name = %format_args!("execute_tool {}", T::NAME),
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = T::NAME,
            gen_ai.conversation.id = self.run.shared().run_id,
            "error.type" = tracing::field::Empty,
        );
        let deps = self.deps;
        let root = self.root;
        let shared = self.run.shared().clone();
        let at = CallSite {
            agent: self.agent_name(),
            owns: self.owned_authorities(),
            scope: self.run.turn().scope,
            lease_seq: self.run.turn().lease_seq,
            hop: self.run.turn().hop,
            run_id: self.run.shared().run_id,
            turn_seq: self.run.turn().turn_seq,
            journal: self.run.turn().journal.clone(),
            transcript: self.run.transcript(),
            mode: self.run.shared().mode,
        };
        let call = async move { call_tool::<W, T>(tool, input, deps, root, &shared, at).await };
        #[cfg(feature = "tracing")]
        let call = tracing::Instrument::instrument(call, span.clone());
        let call = crate::observe::telemetry::timed_tool::<W, T, _>(call);
        ToolCall {
            call: Box::pin(call),
            #[cfg(feature = "tracing")]
            span,
        }
    }
}

impl<'x, W: Workflow, A> Context<'x, W, A> {
    /// A context on `root`, `deps` and `run`.
    #[inline]
    pub(crate) fn new(root: &'x W::Root, deps: &'x W::Deps, run: TurnRef<'x>) -> Self {
        Context {
            root,
            deps,
            run,
            earlier: EarlierCache(once_cell::race::OnceBox::new()),
            agent: PhantomData,
        }
    }
}

impl<W: Workflow, A> Clone for Context<'_, W, A> {
    fn clone(&self) -> Self {
        Context {
            root: self.root,
            deps: self.deps,
            run: self.run.clone(),
            // Built again on request: a clone is made for a tool loop at
            // most, which rarely asks.
            earlier: EarlierCache(once_cell::race::OnceBox::new()),
            agent: PhantomData,
        }
    }
}
