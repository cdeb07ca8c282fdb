//! The state of one run and the checks of every transition: the receipt,
//! the body's result, the record of each transfer, the ledger commit.

use std::borrow::Cow;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

use crate::contract::{Expiry, Moment};
use crate::error::{Reject, RunError};
use crate::executor::{Agent, Context, Route, Transition, Workflow};
use crate::graph::Node;
use crate::record::{Entry, RejectReason, Status, Transcript};

/// The state of one run as the executor keeps it.
pub struct Runtime<'x, W: Workflow> {
    root: &'x W::Root,
    deps: &'x W::Deps,
    pub(crate) hops: u32,
    max_hops: u32,
    edge_uses: Box<[u32]>,
    clock: &'static quanta::Clock,
    started: u64,
    pub(crate) transcript: Transcript,
    ledger: Option<&'x dyn crate::ledger::Ledger>,
    /// The hash of the last record committed to the ledger.
    prev_hash: String,
    /// Microseconds the run had run before it was resumed.
    at_offset_us: u64,
    /// Set on a resumed run whose last record is an accepted transfer: the
    /// receiver's turn runs again without a second receipt.
    pub(crate) resumed_turn: bool,
}

/// The name of agent `index` of `W` (`?` for an index a hand-written
/// workflow got wrong: a name is never worth a panic).
pub(crate) fn agent_name<W: Workflow>(index: u16) -> &'static str {
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
    pub(crate) fn new(
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
    pub(crate) fn restored(
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
                format: r.payload_format,
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
        crate::telemetry::receipt_decided::<W>(&self.transcript);
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
        crate::telemetry::receipt_decided::<W>(&self.transcript);
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
            crate::telemetry::post_condition_failed::<W, A>(c);
            return Err(RunError::PostCondition {
                agent,
                condition: c.expr,
                message: c.message,
            });
        }
        next.route(self)
    }

    /// Agent `A`'s body, run inside its `invoke_agent` span when the
    /// `tracing` feature is on, timed when `metrics` is (as it is, the body
    /// itself).
    pub fn instrument_agent<A: Agent<W>, F: Future<Output = Result<A::Next, Reject>>>(
        &self,
        body: F,
    ) -> impl Future<Output = F::Output> + use<'x, W, A, F> {
        let body = crate::telemetry::timed_turn::<W, A, F>(body);
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
            // Made after the receipt counted the turn: the turns before it.
            workflow.hop = self.hops.saturating_sub(1),
            workflow.seq = self.transcript.len().saturating_sub(1),
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
#[cfg(any(feature = "tracing", feature = "metrics"))]
pub(crate) fn error_type(error: &RunError) -> &'static str {
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
