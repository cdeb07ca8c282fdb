//! The traits a workflow implements (by macro or by hand) and what an agent
//! sees during its turn (`Context`); the runtime and sessions drive them.

use std::future::Future;
use std::marker::PhantomData;
use std::time::Duration;

use std::sync::Arc;

use crate::budget::{BudgetExhausted, Usage};
use crate::contract::{Authority, ContractView, Expiry, Payload, Scope};
use crate::error::{Reject, RunError, ToolError, ToolErrorKind};
use crate::graph::{Condition, Graph};
pub use crate::ledger::PayloadFormat;
use crate::record::RejectReason;
use crate::runtime::{Runtime, agent_name};
use crate::schema::SchemaSet;
use crate::tool::{Effect, FailFast, Fallback, Then, ToolCallRecord, ToolOutcome};

/// A workflow definition: its graph, its state and how a state takes a turn.
///
/// `#[workflow]` implements this for the generated `Spec` type; the
/// `hand_written` example implements it by hand.
pub trait Workflow: Sized + Send + Sync + 'static {
    /// The entry agent's input.
    type Input: Payload;
    /// What a run ends with.
    type Output: Payload;
    /// The invariants pinned for every run (`#[invariants]`), or `()`.
    type Root: crate::invariant::Invariants;
    /// What tools need to do their work (clients, fakes), or `()`.
    type Deps: Send + Sync + 'static;
    /// Which agent runs next, with its input.
    type State: Send + 'static;

    /// The static description of the workflow.
    const GRAPH: &'static Graph;

    /// Records the transfer of the workflow input to the entry agent.
    fn start(input: Self::Input, run: &mut Runtime<'_, Self>) -> Result<Self::State, RunError>;

    /// Runs the agent that `state` names, through [`Runtime::turn`].
    fn turn<'a, 'x>(
        state: Self::State,
        run: &'a mut Runtime<'x, Self>,
    ) -> impl Future<Output = Result<Transition<Self>, RunError>> + Send + 'a;

    /// Runs turns from `state` to the end of the run (a loop over
    /// [`turn`](Self::turn)).
    fn run_to_end<'a, 'x>(
        state: Self::State,
        run: &'a mut Runtime<'x, Self>,
    ) -> impl Future<Output = Result<Self::Output, RunError>> + Send + 'a {
        async move {
            let mut state = state;
            loop {
                match Self::turn(state, run).await {
                    Ok(Transition::To(next)) => state = next,
                    Ok(Transition::End(output)) => return Ok(output),
                    Err(RunError::Returned) => state = run.return_to_sender()?,
                    Err(e) => return Err(e),
                }
            }
        }
    }

    /// The agent index that `state` names.
    fn agent_of(state: &Self::State) -> u16;

    /// The state in which agent `agent` runs with the input recorded in
    /// `payload` (to resume a run from its ledger records). The default says
    /// the workflow cannot be resumed; generated workflows can.
    fn restore(agent: u16, payload: &RecordedPayload<'_>) -> Result<Self::State, String> {
        let _ = payload;
        Err(format!(
            "workflow `{}` cannot restore agent {agent}: it implements no `Workflow::restore`",
            Self::GRAPH.name
        ))
    }

    /// Writes the canonical bytes of the input that `state` carries (to
    /// record a payload a person edited at an escalation). The default says
    /// the workflow cannot; generated workflows can.
    fn encode_state(state: &Self::State, out: &mut Vec<u8>) -> Result<PayloadFormat, String> {
        let _ = (state, out);
        Err(format!(
            "workflow `{}` cannot encode its states: it implements no `Workflow::encode_state`",
            Self::GRAPH.name
        ))
    }

    /// Adds the schema of every payload, input and output to `set`.
    fn schemas(set: &mut SchemaSet);
}

/// A payload as a ledger recorded it, to decode into the receiver's input.
pub struct RecordedPayload<'a> {
    pub(crate) format: crate::canonical::Format,
    pub(crate) bytes: &'a [u8],
}

impl RecordedPayload<'_> {
    /// The recorded value, decoded as `T`.
    pub fn decode<T: serde::de::DeserializeOwned>(&self) -> Result<T, String> {
        crate::canonical::decode(self.format, self.bytes)
    }
}

/// What a turn leads to.
pub enum Transition<W: Workflow> {
    /// Another agent's turn.
    To(W::State),
    /// The end of the run.
    End(W::Output),
}

/// An agent of workflow `W`.
pub trait Agent<W: Workflow>: Sized + Send + Sync + 'static {
    /// The agent's index in [`Graph::agents`].
    const INDEX: u16;
    /// How long the body may take.
    const TIMEOUT: Option<Duration> = None;
    /// The agent's input.
    type Input: Send;
    /// Where the agent may hand off to: an enum whose variants carry exactly
    /// each receiver's input type.
    type Next: Route<W>;

    /// The contract parts of the input that the receipt checks; `None` for
    /// an input that is not a handoff (the workflow input).
    fn contract(_input: &Self::Input) -> Option<ContractView<'_>> {
        None
    }

    /// Evaluates the pre-conditions; the first that fails is returned.
    fn pre(_input: &Self::Input, _cx: &Context<'_, W, Self>) -> Result<(), &'static Condition> {
        Ok(())
    }

    /// Whether [`post`](Self::post) checks anything. Generated code sets it
    /// to `false` for an agent without `#[post]` conditions, and the runtime
    /// then builds no context for them; the default, `true`, always calls
    /// `post`.
    const HAS_POST: bool = true;

    /// Evaluates the post-conditions on the output; the first that fails is returned.
    fn post(_out: &Self::Next, _cx: &Context<'_, W, Self>) -> Result<(), &'static Condition> {
        Ok(())
    }

    /// The agent's body.
    fn run(
        input: Self::Input,
        cx: Context<'_, W, Self>,
    ) -> impl Future<Output = Result<Self::Next, Reject>> + Send;
}

/// A `Next` value: records the transfer it makes and yields the next state.
pub trait Route<W: Workflow>: Send + Sized {
    /// Records the transfer on `run` and returns where the run goes.
    fn route(self, run: &mut Runtime<'_, W>) -> Result<Transition<W>, RunError>;
}

/// A tool that agents of `W` can be granted.
pub trait Tool<W: Workflow>: Copy + Send + Sync + 'static {
    /// The tool's name.
    const NAME: &'static str;
    /// The authority a call needs (checked against the scope of the handoff
    /// the calling agent works under), if any.
    const NEEDS: Option<&'static str> = None;
    /// What the tool does to the world.
    const EFFECT: Effect = Effect::Read;
    /// What happens when a call fails.
    const FALLBACK: Fallback = Fallback::ABORT;
    /// Its input.
    type Input: Payload;
    /// Its output: fails fast when empty, partial or a failure status.
    type Output: Payload + FailFast;
    /// Calls the tool.
    fn call(
        self,
        input: Self::Input,
        deps: &W::Deps,
    ) -> impl Future<Output = Result<Self::Output, ToolError>> + Send;
}

/// Marks that agent `Self` is granted tool `T`; generated from `tools = [...]`.
#[diagnostic::on_unimplemented(
    message = "agent `{Self}` is not granted tool `{T}`",
    label = "tool not granted",
    note = "add the tool to `tools = [...]` in the agent's `#[agent(..)]` attribute, or hand the work to an agent that has it"
)]
pub trait Granted<T> {}

/// What an agent sees during its turn: the pinned invariants, its granted
/// tools and its owned authorities, nothing else.
pub struct Context<'x, W: Workflow, A> {
    pub(crate) root: &'x W::Root,
    pub(crate) deps: &'x W::Deps,
    pub(crate) hop: u32,
    pub(crate) run_id: u64,
    /// The scope of the handoff the agent works under (`None` for the
    /// workflow input, which delegates nothing).
    pub(crate) scope: Option<(&'static str, Expiry)>,
    pub(crate) shared: Arc<RunShared>,
    /// The sequence number the record of this turn's outcome takes (its
    /// handoff, or the record of its failure): with the call's index, what
    /// identifies a tool call of the run.
    pub(crate) turn_seq: u32,
    /// Where each tool call's outcome is journaled before the agent sees it
    /// (the run's ledger), so that a resumed turn does not repeat it.
    pub(crate) journal: Option<&'x dyn crate::ledger::Ledger>,
    pub(crate) agent: PhantomData<fn() -> A>,
}

/// What a run's turns share with the executor: the log of the current
/// turn (tool calls, usage, failures) and the budgets.
#[derive(Default)]
pub(crate) struct RunShared {
    pub(crate) budget: Option<crate::budget::Budget>,
    /// The model `cx.generate` asks (`Executor::with_model`).
    pub(crate) model: Option<Arc<dyn crate::model::Model>>,
    /// Set once anything is logged, so that a turn without tool calls or
    /// charges costs one atomic load.
    pub(crate) dirty: std::sync::atomic::AtomicBool,
    pub(crate) log: std::sync::Mutex<TurnLog>,
    /// Tool calls already recorded (a replay, or a turn cut by a crash),
    /// served instead of calling the tools again.
    pub(crate) recorded: Option<crate::replay::RecordedCalls>,
}

/// The log of the current turn.
#[derive(Default)]
pub(crate) struct TurnLog {
    pub(crate) next_call: u32,
    pub(crate) calls: Vec<ToolCallRecord>,
    pub(crate) usage: Usage,
    /// Spent by the run before this turn.
    pub(crate) spent_before: Usage,
    /// The first call that failed under its fallback policy.
    pub(crate) failure: Option<(ToolError, Then)>,
    /// The rejection this turn's earlier handoff got back, when the turn
    /// runs again because of it.
    pub(crate) returned: Option<Returned>,
    /// The person who approved this turn's input at an escalation.
    pub(crate) approval: Option<Approval>,
    pub(crate) next_model_call: u32,
    pub(crate) model_calls: Vec<crate::model::ModelCallRecord>,
}

impl RunShared {
    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, TurnLog> {
        // A panic in another task holding the lock leaves a log that is
        // still consistent (every write is one push or one add).
        self.log.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn mark(&self) {
        self.dirty.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Charges `usage` to the current turn; past a budget it is an error.
    pub(crate) fn charge(&self, usage: Usage) -> Result<(), BudgetExhausted> {
        let mut log = self.lock();
        log.usage.add(&usage);
        self.mark();
        let mut spent = log.spent_before;
        spent.add(&log.usage);
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
        self.hop
    }

    /// The run's id.
    pub fn run_id(&self) -> u64 {
        self.run_id
    }

    /// A scope delegating `authority` to a receiver (which must own it).
    pub fn delegate<Au: Authority>(&self, authority: Au) -> Scope<Au> {
        Scope::new(authority)
    }

    /// When this turn runs again because the receiver of its handoff
    /// returned it: who, and why. Handle it: sending the same payload again
    /// is rejected.
    pub fn returned(&self) -> Option<Returned> {
        self.shared.lock().returned.clone()
    }

    /// When this turn runs after a person approved its input at an
    /// escalation: who, and whether they edited it.
    pub fn approval(&self) -> Option<Approval> {
        self.shared.lock().approval.clone()
    }

    /// Charges `usage` (tokens, cost) to the run's budget. Past a budget it
    /// is an error; the run stops with
    /// [`RunError::BudgetExhausted`] at the end of the turn whatever the
    /// agent does with the error.
    pub fn charge(&self, usage: Usage) -> Result<(), BudgetExhausted> {
        self.shared.charge(usage)
    }

    /// Asks the run's model (`Executor::with_model`) for a `T`: the prompt
    /// goes out with `T`'s JSON Schema as the response format, and the
    /// reply comes back only as a `T` that matches it (see
    /// [`Generation`](crate::model::Generation): repairs, rules, budget).
    /// Every attempt's tokens are charged to the run's budget, and the call
    /// is recorded with the turn. With `?` a failure ends the turn.
    pub fn generate<T: Payload>(
        &self,
        prompt: impl Into<crate::model::Prompt>,
    ) -> crate::model::Generation<'static, T> {
        let model = self.shared.model.clone();
        crate::model::Generation::shared(self.shared.clone(), model, prompt.into())
    }

    /// Like [`generate`](Self::generate), asking `model` instead of the
    /// run's model.
    pub fn generate_with<'m, T: Payload>(
        &self,
        model: &'m dyn crate::model::Model,
        prompt: impl Into<crate::model::Prompt>,
    ) -> crate::model::Generation<'m, T> {
        crate::model::Generation::borrowed(self.shared.clone(), model, prompt.into())
    }

    /// What the run has spent so far, this turn included.
    pub fn spent(&self) -> Usage {
        let log = self.shared.lock();
        let mut spent = log.spent_before;
        spent.add(&log.usage);
        spent
    }

    /// Calls a tool this agent is granted.
    ///
    /// Before the call: the tool's authority must be the one the handoff
    /// delegates, not expired, and the tool-call budget must have room.
    /// After it: the result must pass the output's [`FailFast`] rule;
    /// transient failures are retried as the tool declares. Every call is
    /// recorded (arguments, result and its digest, outcome, attempts,
    /// duration) with the transfer its turn produces.
    pub fn call<T>(&self, tool: T, input: T::Input) -> ToolCall<'x, T::Output>
    where
        T: Tool<W>,
        A: Granted<T>,
    {
        #[cfg(feature = "tracing")]
        let span = tracing::info_span!(
            "execute_tool",
            otel.name = %format_args!("execute_tool {}", T::NAME),
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = T::NAME,
            gen_ai.conversation.id = self.run_id,
            "error.type" = tracing::field::Empty,
        );
        let deps = self.deps;
        let shared = self.shared.clone();
        let at = CallSite {
            scope: self.scope,
            hop: self.hop,
            run_id: self.run_id,
            turn_seq: self.turn_seq,
            journal: self.journal,
        };
        let call = async move { call_tool::<W, T>(tool, input, deps, &shared, at).await };
        #[cfg(feature = "tracing")]
        let call = tracing::Instrument::instrument(call, span.clone());
        let call = crate::telemetry::timed_tool::<W, T, _>(call);
        ToolCall {
            call: Box::pin(call),
            #[cfg(feature = "tracing")]
            span,
        }
    }
}

/// Whether the scope of the handoff an agent works under covers a call of
/// a tool needing `needs` at hop `hop`.
fn check_scope(
    tool: &'static str,
    needs: Option<&'static str>,
    scope: Option<(&'static str, Expiry)>,
    hop: u32,
) -> Result<(), ToolError> {
    let (Some(needs), Some((authority, expires))) = (needs, scope) else {
        return Ok(());
    };
    if authority != needs {
        return Err(ToolError::of(
            tool,
            ToolErrorKind::OutOfScope,
            format!(
                "the tool needs authority `{needs}`, the handoff this turn works under delegates `{authority}`"
            ),
        ));
    }
    let expired = match expires {
        Expiry::Never => false,
        Expiry::AtHop(h) => hop > h,
        Expiry::AtUnixMs(ms) => crate::contract::Moment::at_hop(hop).unix_ms() >= ms,
    };
    if expired {
        return Err(ToolError::of(
            tool,
            ToolErrorKind::OutOfScope,
            format!("the scope over authority `{needs}` has expired"),
        ));
    }
    Ok(())
}

/// Where a tool call is made: the turn's scope and place in the run.
struct CallSite<'x> {
    scope: Option<(&'static str, Expiry)>,
    hop: u32,
    run_id: u64,
    turn_seq: u32,
    journal: Option<&'x dyn crate::ledger::Ledger>,
}

async fn call_tool<W: Workflow, T: Tool<W>>(
    tool: T,
    input: T::Input,
    deps: &W::Deps,
    shared: &RunShared,
    at: CallSite<'_>,
) -> Result<T::Output, ToolError> {
    let CallSite { scope, hop, .. } = at;
    let started = std::time::Instant::now();
    let index = {
        let mut log = shared.lock();
        log.next_call += 1;
        log.next_call - 1
    };
    shared.mark();
    let arguments = serde_json::to_string(&input);
    let mut attempts = 0;
    // Set when the outcome comes from a record, not from the tool.
    let mut served: Option<ToolCallRecord> = None;
    let outcome: Result<(T::Output, String), ToolError> = async {
        let arguments = arguments
            .as_ref()
            .map_err(|e| ToolError::new(T::NAME, format!("the arguments do not serialize: {e}")))?;
        check_scope(T::NAME, T::NEEDS, scope, hop)?;
        {
            let mut log = shared.lock();
            log.usage.tool_calls += 1;
            let mut spent = log.spent_before;
            spent.add(&log.usage);
            if let Some(budget) = shared.budget
                && let Some(limit) = budget.tool_calls
                && spent.tool_calls > limit
            {
                return Err(ToolError::of(
                    T::NAME,
                    ToolErrorKind::Budget,
                    format!("the run's budget of {limit} tool calls is used up"),
                ));
            }
        }
        if let Some(recorded) = &shared.recorded {
            match recorded.serve(at.turn_seq, index, T::NAME, arguments) {
                crate::replay::Served::Call(call) => {
                    let outcome = recorded.outcome::<T::Output>(T::NAME, at.turn_seq, &call);
                    attempts = call.attempts;
                    served = Some(call);
                    return outcome;
                }
                crate::replay::Served::Diverged(error) => return Err(error),
                crate::replay::Served::Live => {}
            }
        }
        let mut input = Some(input);
        let mut backoff = T::FALLBACK.backoff_ms;
        loop {
            attempts += 1;
            let this = match input.take() {
                Some(first) => first,
                // A retry: the arguments again, from their recorded text.
                None => serde_json::from_str(arguments).map_err(|e| {
                    ToolError::new(T::NAME, format!("the arguments do not read back: {e}"))
                })?,
            };
            let id = crate::tool::CallId {
                run_id: at.run_id,
                turn_seq: at.turn_seq,
                index,
            };
            let result = match crate::tool::with_call_id(id, tool.call(this, deps)).await {
                Ok(out) => match out.fail_fast() {
                    Ok(()) => match serde_json::to_string(&out) {
                        Ok(text) => Ok((out, text)),
                        Err(e) => Err(ToolError::of(
                            T::NAME,
                            ToolErrorKind::Schema,
                            format!("the result does not serialize: {e}"),
                        )),
                    },
                    Err(unusable) => Err(unusable.into_error(T::NAME)),
                },
                Err(e) => Err(e),
            };
            match result {
                Err(e) if e.kind.is_transient() && attempts <= T::FALLBACK.retries => {
                    tokio::time::sleep(std::time::Duration::from_millis(backoff)).await;
                    backoff = backoff.saturating_mul(2);
                }
                other => return other,
            }
        }
    }
    .await;
    let duration_us = started.elapsed().as_micros() as u64;
    if let Some(call) = served {
        // The recorded call again, as it was recorded.
        let mut log = shared.lock();
        if let (Err(error), None) = (&outcome, &log.failure) {
            log.failure = Some((error.clone(), T::FALLBACK.then));
        }
        log.calls.push(call);
        return outcome.map(|(out, _)| out);
    }
    let (mut outcome, recorded) = match outcome {
        Ok((out, text)) => {
            let digest = crate::tool::digest(&text);
            (
                Ok(out),
                ToolOutcome::Ok {
                    result: text,
                    digest,
                },
            )
        }
        Err(error) => (Err(error.clone()), ToolOutcome::Failed { error }),
    };
    let record = ToolCallRecord {
        tool: std::borrow::Cow::Borrowed(T::NAME),
        index,
        arguments: arguments.unwrap_or_default(),
        outcome: recorded,
        attempts,
        duration_us,
    };
    // Journaled before the agent sees the outcome: a turn resumed after a
    // crash is served this outcome instead of calling the tool again.
    let mut then = T::FALLBACK.then;
    if let Some(journal) = at.journal
        && let Err(e) = journal.append_tool_call(at.run_id, at.turn_seq, &record)
    {
        // An outcome that is not durable is not used: the run stops.
        outcome = Err(ToolError::new(
            T::NAME,
            format!("the ledger could not record the call: {e}"),
        ));
        then = Then::Abort;
    }
    let mut log = shared.lock();
    if let Err(error) = &outcome
        && log.failure.is_none()
    {
        log.failure = Some((error.clone(), then));
    }
    log.calls.push(record);
    outcome
}

/// A tool call under way: `cx.call(tool, input).await`.
///
/// A named future (not `impl Future`), so that an ungranted tool is reported
/// once, at the call, and not again at the `.await`.
#[must_use = "a tool call does nothing until it is awaited"]
pub struct ToolCall<'x, O> {
    call: std::pin::Pin<Box<dyn Future<Output = Result<O, ToolError>> + Send + 'x>>,
    #[cfg(feature = "tracing")]
    span: tracing::Span,
}

impl<O> Future for ToolCall<'_, O> {
    type Output = Result<O, ToolError>;
    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let poll = self.call.as_mut().poll(cx);
        #[cfg(feature = "tracing")]
        if let std::task::Poll::Ready(Err(e)) = &poll {
            self.span.record("error.type", tool_error_type(e.kind));
        }
        poll
    }
}

// Two grants every agent has, of tools that cannot exist: with at least two
// candidates the compiler never guesses the tool of `cx.call` from a single
// grant, and an ungranted tool is reported as such.
#[doc(hidden)]
pub enum NoTool {}
#[doc(hidden)]
pub enum NoToolEither {}
impl<A> Granted<NoTool> for A {}
impl<A> Granted<NoToolEither> for A {}

impl<W: Workflow, A> Clone for Context<'_, W, A> {
    fn clone(&self) -> Self {
        Context {
            root: self.root,
            deps: self.deps,
            hop: self.hop,
            run_id: self.run_id,
            scope: self.scope,
            shared: self.shared.clone(),
            turn_seq: self.turn_seq,
            journal: self.journal,
            agent: PhantomData,
        }
    }
}

/// The `error.type` of a tool error (a stable, low-cardinality name).
#[cfg(feature = "tracing")]
fn tool_error_type(kind: ToolErrorKind) -> &'static str {
    match kind {
        ToolErrorKind::Failed => "tool_error",
        ToolErrorKind::Status(_) => "status",
        ToolErrorKind::Empty => "empty_result",
        ToolErrorKind::Partial => "partial_result",
        ToolErrorKind::Schema => "schema_mismatch",
        ToolErrorKind::OutOfScope => "out_of_scope",
        ToolErrorKind::Budget => "budget_exhausted",
        ToolErrorKind::Timeout => "timeout",
    }
}
