//! The state-machine executor: the traits a workflow implements (by macro or
//! by hand) and the loop that enforces every transition.

use std::borrow::Cow;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::Serialize;

use crate::contract::{Authority, ContractView, Expiry, Moment, Payload, Scope};
use crate::error::{Aborted, Completed, Reject, RunError, ToolError};
use crate::graph::{Condition, Graph, Node};
use crate::record::{Entry, RejectReason, Status, Transcript};
use crate::schema::SchemaSet;

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
    type Root: Send + Sync + 'static;
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
                match Self::turn(state, run).await? {
                    Transition::To(next) => state = next,
                    Transition::End(output) => return Ok(output),
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
    /// Its input.
    type Input: Payload;
    /// Its output.
    type Output: Payload;
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
    root: &'x W::Root,
    deps: &'x W::Deps,
    hop: u32,
    run_id: u64,
    agent: PhantomData<fn() -> A>,
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

    /// Calls a tool this agent is granted.
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
        #[cfg(feature = "tracing")]
        let call = tracing::Instrument::instrument(tool.call(input, self.deps), span.clone());
        #[cfg(not(feature = "tracing"))]
        let call = tool.call(input, self.deps);
        ToolCall {
            call: Box::pin(call),
            #[cfg(feature = "tracing")]
            span,
        }
    }
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
        if let std::task::Poll::Ready(Err(_)) = &poll {
            self.span.record("error.type", "tool_error");
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
        *self
    }
}
impl<W: Workflow, A> Copy for Context<'_, W, A> {}

/// The state of one run as the executor keeps it.
pub struct Runtime<'x, W: Workflow> {
    root: &'x W::Root,
    deps: &'x W::Deps,
    hops: u32,
    max_hops: u32,
    edge_uses: Box<[u32]>,
    clock: &'static quanta::Clock,
    started: u64,
    transcript: Transcript,
    ledger: Option<&'x dyn crate::ledger::Ledger>,
    /// The hash of the last record committed to the ledger.
    prev_hash: String,
    /// Microseconds the run had run before it was resumed.
    at_offset_us: u64,
    /// Set on a resumed run whose last record is an accepted transfer: the
    /// receiver's turn runs again without a second receipt.
    resumed_turn: bool,
}

/// The name of agent `index` of `W` (`?` for an index a hand-written
/// workflow got wrong: a name is never worth a panic).
fn agent_name<W: Workflow>(index: u16) -> &'static str {
    W::GRAPH.agents.get(index as usize).map_or("?", |a| a.name)
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
    fn new(
        root: &'x W::Root,
        deps: &'x W::Deps,
        max_hops: u32,
        ledger: Option<&'x dyn crate::ledger::Ledger>,
    ) -> Self {
        Runtime {
            root,
            deps,
            hops: 0,
            max_hops,
            edge_uses: vec![0; W::GRAPH.edges.len()].into_boxed_slice(),
            clock: clock(),
            started: clock().raw(),
            transcript: Transcript::new(next_run_id(), W::GRAPH),
            ledger,
            prev_hash: String::new(),
            at_offset_us: 0,
            resumed_turn: false,
        }
    }

    /// A runtime carrying on run `run_id` after its ledger `records` (verified).
    fn restored(
        root: &'x W::Root,
        deps: &'x W::Deps,
        max_hops: u32,
        ledger: &'x dyn crate::ledger::Ledger,
        run_id: u64,
        records: &[crate::ledger::LedgerRecord],
    ) -> Result<Self, String> {
        let mut run = Runtime::new(root, deps, max_hops, Some(ledger));
        run.transcript = Transcript::new(run_id, W::GRAPH);
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
            let status = match &r.receipt {
                crate::Receipt::Pending => Status::Pending,
                crate::Receipt::Accepted => Status::Accepted,
                crate::Receipt::Rejected { reason } => {
                    t.rejection = Some(reason.clone());
                    Status::Rejected
                }
            };
            t.entries.push(Entry {
                hop: r.hop,
                edge: edge as u16,
                status,
                format: match r.payload_format {
                    crate::ledger::PayloadFormat::Msgpack => crate::canonical::Format::MsgPack,
                    crate::ledger::PayloadFormat::Json => crate::canonical::Format::Json,
                },
                start: u32::try_from(start).map_err(|_| "records exceed 4 GiB".to_owned())?,
                end: u32::try_from(t.bytes.len()).map_err(|_| "records exceed 4 GiB".to_owned())?,
                at_us: r.at_us,
            });
            if W::GRAPH.edges[edge].bound.is_some() {
                run.edge_uses[edge] += 1;
            }
            if status == Status::Accepted && matches!(W::GRAPH.edges[edge].to, Node::Agent(_)) {
                run.hops += 1;
            }
            run.prev_hash = r.hash.clone();
            run.at_offset_us = r.at_us;
        }
        Ok(run)
    }

    /// Commits the last record to the ledger, if there is one: called once
    /// its receipt is decided, before the receiver's body runs.
    fn commit_last(&mut self) -> Result<(), RunError> {
        let Some(ledger) = self.ledger else {
            return Ok(());
        };
        let i = self.transcript.len().saturating_sub(1);
        let prev = if i == 0 {
            crate::ledger::GENESIS
        } else {
            self.prev_hash.as_str()
        };
        let record = self
            .transcript
            .ledger_record(i, prev)
            .map_err(|e| RunError::Ledger(e.to_string()))?;
        ledger
            .append(&record)
            .map_err(|e| RunError::Ledger(e.to_string()))?;
        self.prev_hash = record.hash;
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

    fn context<A: Agent<W>>(&self) -> Context<'x, W, A> {
        Context {
            root: self.root,
            deps: self.deps,
            hop: self.hops,
            run_id: self.transcript.run_id,
            agent: PhantomData,
        }
    }

    /// Records the transfer of `payload` over edge `edge` to an agent, with
    /// its receipt pending; rejects it if the edge's loop bound is used up.
    pub fn handoff<P: Serialize>(&mut self, edge: u16, payload: &P) -> Result<(), RunError> {
        let info = self.edge(edge, Node::End, false)?;
        self.record(edge, info, payload, Status::Pending)?;
        if let Some(bound) = info.bound {
            let uses = &mut self.edge_uses[edge as usize];
            *uses += 1;
            if *uses > bound {
                return Err(self.reject_last(RejectReason::LoopBound { bound }));
            }
        }
        Ok(())
    }

    /// Records the transfer of the workflow output over edge `edge` to `END`.
    pub fn end<P: Serialize>(&mut self, edge: u16, output: &P) -> Result<(), RunError> {
        let info = self.edge(edge, Node::End, true)?;
        self.record(edge, info, output, Status::Accepted)?;
        self.commit_last()
    }

    /// The edge `edge`, checked to exist and to lead to `END` (`to_end`) or
    /// not: generated code always passes a right index; a hand-written
    /// workflow that does not gets an error, never a panic.
    fn edge(
        &self,
        edge: u16,
        end: Node,
        to_end: bool,
    ) -> Result<&'static crate::EdgeInfo, RunError> {
        match W::GRAPH.edges.get(edge as usize) {
            Some(info) if (info.to == end) == to_end => Ok(info),
            _ => Err(RunError::Protocol(format!(
                "edge {edge} is not an edge of workflow `{}` to {}",
                W::GRAPH.name,
                if to_end { "END" } else { "an agent" }
            ))),
        }
    }

    fn record<P: Serialize>(
        &mut self,
        edge: u16,
        info: &'static crate::EdgeInfo,
        payload: &P,
        status: Status,
    ) -> Result<(), RunError> {
        let t = &mut self.transcript;
        let start = t.bytes.len();
        let format = match crate::canonical::encode(&mut t.bytes, payload) {
            Ok(format) => format,
            Err(error) => {
                return Err(RunError::Encode {
                    from: W::GRAPH.node_name(info.from),
                    to: W::GRAPH.node_name(info.to),
                    error,
                });
            }
        };
        // Offsets are u32 to keep entries small: a run's records are capped
        // at 4 GiB of payload bytes rather than silently wrapped.
        let (Ok(start), Ok(end)) = (u32::try_from(start), u32::try_from(t.bytes.len())) else {
            t.bytes.truncate(start);
            return Err(RunError::Encode {
                from: W::GRAPH.node_name(info.from),
                to: W::GRAPH.node_name(info.to),
                error: "the run's records exceed 4 GiB of payload bytes".into(),
            });
        };
        t.entries.push(Entry {
            hop: self.hops,
            edge,
            status,
            format,
            start,
            end,
            at_us: self.at_offset_us
                + self.clock.delta_as_nanos(self.started, self.clock.raw()) / 1000,
        });
        Ok(())
    }

    /// Marks the last transfer rejected and returns the matching error.
    fn reject_last(&mut self, reason: RejectReason) -> RunError {
        let t = &mut self.transcript;
        let Some(entry) = t.entries.last_mut() else {
            return RunError::Protocol("a receipt was decided with no transfer recorded".into());
        };
        let Some(edge) = W::GRAPH.edges.get(entry.edge as usize) else {
            return RunError::Protocol("a receipt was decided for an unknown edge".into());
        };
        entry.status = Status::Rejected;
        t.rejection = Some(reason.clone());
        self.handoff_event();
        let error = RunError::Rejected {
            from: W::GRAPH.node_name(edge.from),
            to: W::GRAPH.node_name(edge.to),
            reason,
        };
        // A rejection the ledger could not keep is reported as that.
        match self.commit_last() {
            Ok(()) => error,
            Err(ledger) => ledger,
        }
    }

    /// Decides the receipt of the pending transfer to agent `A`: hop cap,
    /// scope expiry, stop conditions, pre-conditions. On acceptance the
    /// turn is counted and the agent's context returned; on rejection the
    /// record says why and the run stops with the reason.
    pub fn receive<A: Agent<W>>(
        &mut self,
        input: &A::Input,
    ) -> Result<Context<'x, W, A>, RunError> {
        if std::mem::take(&mut self.resumed_turn) {
            // The receipt was decided and committed before the crash.
            let accepted = self.transcript.entries.last().is_some_and(|e| {
                e.status == Status::Accepted
                    && W::GRAPH.edges.get(e.edge as usize).map(|i| i.to)
                        == Some(Node::Agent(A::INDEX))
            });
            if !accepted {
                return Err(RunError::Protocol(format!(
                    "a resumed run's accepted transfer is not to agent `{}`",
                    agent_name::<W>(A::INDEX)
                )));
            }
            let mut cx = self.context::<A>();
            cx.hop = self.hops.saturating_sub(1);
            return Ok(cx);
        }
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
        if self.hops >= self.max_hops {
            return Err(self.reject_last(RejectReason::HopCap {
                max_hops: self.max_hops,
            }));
        }
        let moment = Moment { hop: self.hops };
        if let Some(contract) = A::contract(input) {
            let expired = match contract.expires {
                Expiry::Never => false,
                Expiry::AtHop(hop) => moment.hop > hop,
                Expiry::AtUnixMs(ms) => moment.unix_ms() >= ms,
            };
            if expired {
                return Err(self.reject_last(RejectReason::ScopeExpired {
                    authority: Cow::Borrowed(contract.authority),
                }));
            }
            if let Some(condition) = contract.stop.met_at(&moment) {
                return Err(self.reject_last(RejectReason::StopConditionMet { condition }));
            }
        }
        let cx = self.context::<A>();
        if let Err(c) = A::pre(input, &cx) {
            return Err(self.reject_last(RejectReason::PreCondition {
                condition: Cow::Borrowed(c.expr),
                message: Cow::Borrowed(c.message),
            }));
        }
        if let Some(last) = self.transcript.entries.last_mut() {
            last.status = Status::Accepted;
        }
        self.commit_last()?;
        self.handoff_event();
        self.hops += 1;
        Ok(cx)
    }

    /// Takes what agent `A`'s body returned: checks its post-conditions and
    /// routes its output (recording the next transfer).
    pub fn deliver<A: Agent<W>>(
        &mut self,
        result: Result<A::Next, Reject>,
        cx: Context<'x, W, A>,
    ) -> Result<Transition<W>, RunError> {
        let agent = agent_name::<W>(A::INDEX);
        let next = result.map_err(|error| RunError::AgentFailed { agent, error })?;
        if let Err(c) = A::post(&next, &cx) {
            return Err(RunError::PostCondition {
                agent,
                condition: c.expr,
                message: c.message,
            });
        }
        next.route(self)
    }

    /// Agent `A`'s body, run inside its `invoke_agent` span when the
    /// `tracing` feature is on (as it is, the body itself).
    pub fn instrument_agent<A: Agent<W>, F: Future>(
        &self,
        body: F,
    ) -> impl Future<Output = F::Output> + use<'x, W, A, F> {
        #[cfg(feature = "tracing")]
        {
            tracing::Instrument::instrument(body, self.agent_span::<A>())
        }
        #[cfg(not(feature = "tracing"))]
        {
            body
        }
    }

    /// The `invoke_agent` span of agent `A`'s turn (OpenTelemetry GenAI
    /// conventions).
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
            workflow.hop = self.hops,
        )
    }

    /// Emits the handoff event of the last transfer (its receipt decided).
    #[cfg(not(feature = "tracing"))]
    fn handoff_event(&self) {}

    /// Emits the handoff event of the last transfer (its receipt decided).
    #[cfg(feature = "tracing")]
    fn handoff_event(&self) {
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
        };
        let reason = match (&e.status, &self.transcript.rejection) {
            (Status::Rejected, Some(reason)) => reason.to_string(),
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

    /// The error for agent `A` running past its timeout.
    pub fn timed_out<A: Agent<W>>(&self) -> RunError {
        RunError::Timeout {
            agent: agent_name::<W>(A::INDEX),
            after_ms: A::TIMEOUT.map_or(0, |t| t.as_millis() as u64),
        }
    }

    /// One whole turn of agent `A`: [`receive`](Self::receive), its body
    /// (under its timeout), [`deliver`](Self::deliver). Generated code
    /// inlines these steps; hand-written workflows can call this.
    pub async fn turn<A: Agent<W>>(&mut self, input: A::Input) -> Result<Transition<W>, RunError> {
        let cx = self.receive::<A>(&input)?;
        let body = self.instrument_agent::<A, _>(A::run(input, cx));
        let result = match A::TIMEOUT {
            None => body.await,
            Some(limit) => match tokio::time::timeout(limit, body).await {
                Ok(result) => result,
                Err(_) => return Err(self.timed_out::<A>()),
            },
        };
        self.deliver::<A>(result, cx)
    }
}

/// The `error.type` of a run error (a stable, low-cardinality name).
#[cfg(feature = "tracing")]
fn error_type(error: &RunError) -> &'static str {
    match error {
        RunError::Rejected { .. } => "rejected",
        RunError::PostCondition { .. } => "post_condition",
        RunError::AgentFailed { .. } => "agent_failed",
        RunError::Timeout { .. } => "timeout",
        RunError::Encode { .. } => "encode",
        RunError::Ledger(_) => "ledger",
        RunError::Protocol(_) => "protocol",
        RunError::Resume(_) => "resume",
        RunError::Interrupted => "interrupted",
        RunError::Finished => "finished",
    }
}

/// What one step of a [`Session`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum Step<O> {
    /// An agent's turn ran; `next` runs after it.
    Continue {
        /// The agent that runs next.
        next: &'static str,
    },
    /// The run ended with this output.
    Finished(O),
}

/// A run driven one turn at a time.
pub struct Session<'x, W: Workflow> {
    run: Runtime<'x, W>,
    state: Result<Option<W::State>, RunError>,
}

impl<'x, W: Workflow> Session<'x, W> {
    /// The agent that runs at the next step, if the run is not over.
    pub fn next_agent(&self) -> Option<&'static str> {
        match &self.state {
            Ok(Some(state)) => Some(agent_name::<W>(W::agent_of(state))),
            _ => None,
        }
    }

    /// Runs one agent turn.
    pub async fn step(&mut self) -> Result<Step<W::Output>, RunError> {
        // Until the turn completes, the session says it was interrupted: a
        // `step` future dropped mid-turn (a timeout, a `select!`) leaves a
        // truthful error behind, not a run that looks finished.
        let state = match std::mem::replace(&mut self.state, Err(RunError::Interrupted)) {
            Ok(Some(state)) => state,
            Ok(None) => {
                self.state = Ok(None);
                return Err(RunError::Finished);
            }
            Err(e) => {
                // A stopped run keeps answering with what stopped it.
                self.state = Err(e.clone());
                return Err(e);
            }
        };
        match W::turn(state, &mut self.run).await {
            Ok(Transition::To(next)) => {
                let name = agent_name::<W>(W::agent_of(&next));
                self.state = Ok(Some(next));
                Ok(Step::Continue { next: name })
            }
            Ok(Transition::End(output)) => {
                self.state = Ok(None);
                Ok(Step::Finished(output))
            }
            Err(e) => {
                self.state = Err(e.clone());
                Err(e)
            }
        }
    }

    /// Agent turns completed so far.
    pub fn hops(&self) -> u32 {
        self.run.hops
    }

    /// The transfers recorded so far.
    pub fn transcript(&self) -> &Transcript {
        &self.run.transcript
    }

    /// The transcript of the run so far, whatever state it is in (after
    /// [`Step::Finished`], an error, or midway).
    pub fn into_transcript(self) -> Transcript {
        self.run.transcript
    }

    /// Runs the remaining turns to the end.
    pub async fn finish(self) -> Result<Completed<W::Output>, Aborted> {
        let Session { mut run, state } = self;
        let state = match state {
            Ok(Some(state)) => state,
            Ok(None) => {
                return Err(Aborted {
                    error: RunError::Finished,
                    transcript: run.transcript,
                });
            }
            Err(error) => {
                return Err(Aborted {
                    error,
                    transcript: run.transcript,
                });
            }
        };
        #[cfg(feature = "tracing")]
        let span = tracing::info_span!(
            "invoke_workflow",
            otel.name = %format_args!("invoke_workflow {}", W::GRAPH.name),
            gen_ai.operation.name = "invoke_workflow",
            gen_ai.conversation.id = run.transcript.run_id,
            workflow.name = W::GRAPH.name,
            "error.type" = tracing::field::Empty,
        );
        #[cfg(feature = "tracing")]
        let ended =
            tracing::Instrument::instrument(W::run_to_end(state, &mut run), span.clone()).await;
        #[cfg(not(feature = "tracing"))]
        let ended = W::run_to_end(state, &mut run).await;
        #[cfg(feature = "tracing")]
        if let Err(error) = &ended {
            span.record("error.type", error_type(error));
        }
        match ended {
            Ok(output) => Ok(Completed {
                output,
                transcript: run.transcript,
            }),
            Err(error) => Err(Aborted {
                error,
                transcript: run.transcript,
            }),
        }
    }
}

/// Runs a workflow: holds the pinned invariants and the dependencies.
pub struct Executor<W: Workflow> {
    root: W::Root,
    deps: W::Deps,
    max_hops: u32,
    ledger: Option<std::sync::Arc<dyn crate::ledger::Ledger>>,
}

impl<W: Workflow> Executor<W> {
    /// An executor with the invariants pinned for every run and the
    /// dependencies its tools use. The hop cap defaults to the computed bound.
    pub fn new(root: W::Root, deps: W::Deps) -> Self {
        Executor {
            root,
            deps,
            max_hops: W::GRAPH.max_hops,
            ledger: None,
        }
    }

    /// Commits every transfer to `ledger` once its receipt is decided,
    /// before the receiver's body runs (and the `END` transfer before the
    /// run returns). A record the ledger cannot store stops the run with
    /// `RunError::Ledger`: no agent works on an unrecorded transfer.
    pub fn with_ledger(mut self, ledger: std::sync::Arc<dyn crate::ledger::Ledger>) -> Self {
        self.ledger = Some(ledger);
        self
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

    /// The hop cap in force.
    pub fn max_hops(&self) -> u32 {
        self.max_hops
    }

    /// Starts a run to drive step by step.
    pub fn start(&self, input: W::Input) -> Session<'_, W> {
        let mut run = Runtime::new(
            &self.root,
            &self.deps,
            self.max_hops,
            self.ledger.as_deref(),
        );
        let state = W::start(input, &mut run).map(Some);
        Session { run, state }
    }

    /// Carries on run `run_id` from its records in the attached ledger, after
    /// a crash or a restart: the records are verified; a run that had ended
    /// gives its recorded output (or its rejection) back; otherwise the
    /// receiver of the last accepted transfer runs its turn again (agent
    /// turns are at least once; every transfer is still recorded once) and
    /// the run goes on to its end, its new records chained to the old.
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
        let records = ledger.records(run_id).map_err(|e| fail(e.to_string()))?;
        match ledger.verify_run(run_id) {
            Ok(Ok(())) => {}
            Ok(Err(tampering)) => {
                return Err(fail(format!("run {run_id} does not verify: {tampering}")));
            }
            Err(e) => return Err(fail(e.to_string())),
        }
        let mut run = Runtime::<W>::restored(
            &self.root,
            &self.deps,
            self.max_hops,
            ledger,
            run_id,
            &records,
        )
        .map_err(fail)?;
        let Some(last) = records.last() else {
            return Err(fail(format!("run {run_id} has no records")));
        };
        let bytes = last.payload_bytes().map_err(|e| fail(e.to_string()))?;
        let payload = RecordedPayload {
            format: match last.payload_format {
                crate::ledger::PayloadFormat::Msgpack => crate::canonical::Format::MsgPack,
                crate::ledger::PayloadFormat::Json => crate::canonical::Format::Json,
            },
            bytes: &bytes,
        };
        let entry = run.transcript.entries.last().map(|e| (e.edge, e.status));
        let Some((edge, status)) = entry else {
            return Err(fail(format!("run {run_id} has no records")));
        };
        let info = &W::GRAPH.edges[edge as usize];
        match (status, info.to) {
            (Status::Accepted, Node::End) => match payload.decode::<W::Output>() {
                Ok(output) => Ok(Completed {
                    output,
                    transcript: run.transcript,
                }),
                Err(e) => Err(fail(format!("the recorded output does not decode: {e}"))),
            },
            (Status::Rejected, _) => Err(Aborted {
                error: RunError::Rejected {
                    from: W::GRAPH.node_name(info.from),
                    to: W::GRAPH.node_name(info.to),
                    reason: run
                        .transcript
                        .rejection
                        .clone()
                        .unwrap_or(RejectReason::HopCap { max_hops: 0 }),
                },
                transcript: run.transcript,
            }),
            (Status::Accepted, Node::Agent(agent)) => {
                let state = W::restore(agent, &payload).map_err(fail)?;
                run.resumed_turn = true;
                Session {
                    run,
                    state: Ok(Some(state)),
                }
                .finish()
                .await
            }
            _ => Err(fail(format!(
                "run {run_id} ends with a transfer whose receipt was never decided"
            ))),
        }
    }

    /// Runs to the end: the output, or the error that stopped the run; both
    /// with the transcript of every transfer.
    ///
    /// An agent with `timeout_ms` needs a tokio runtime with its time driver
    /// (`#[tokio::main]`, or `Builder::enable_time`/`enable_all`); without
    /// one, tokio panics when the timeout starts.
    pub async fn run(&self, input: W::Input) -> Result<Completed<W::Output>, Aborted> {
        self.start(input).finish().await
    }

    /// The JSON Schemas of every payload, input, output, contract part and record.
    pub fn schemas() -> SchemaSet {
        SchemaSet::of::<W>()
    }

    /// The manifest of the workflow: agents, authorities, tools, edges, bounds.
    pub fn manifest() -> crate::manifest::Manifest {
        crate::manifest::Manifest::of(W::GRAPH)
    }

    /// A Mermaid flowchart of the workflow.
    pub fn mermaid() -> String {
        crate::manifest::mermaid(W::GRAPH)
    }
}

/// Edge index helper for hand-written workflows: the index of the first
/// edge from `from` to `to` in `graph`.
pub const fn edge_index(graph: &Graph, from: Node, to: Node) -> u16 {
    let mut i = 0;
    while i < graph.edges.len() {
        let e = &graph.edges[i];
        if node_eq(e.from, from) && node_eq(e.to, to) {
            return i as u16;
        }
        i += 1;
    }
    panic!("no such edge in the graph")
}

const fn node_eq(a: Node, b: Node) -> bool {
    match (a, b) {
        (Node::Start, Node::Start) | (Node::End, Node::End) => true,
        (Node::Agent(x), Node::Agent(y)) => x == y,
        _ => false,
    }
}
