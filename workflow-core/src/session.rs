//! Driving runs: the executor that holds a workflow's invariants and
//! dependencies, and sessions that run one turn at a time or to the end.

use crate::error::{Aborted, Completed, RunError};
use crate::executor::{RecordedPayload, Transition, Workflow};
use crate::graph::{Graph, Node};
use crate::record::{RejectReason, Status, Transcript};
#[cfg(feature = "tracing")]
use crate::runtime::error_type;
use crate::runtime::{Runtime, agent_name};
use crate::schema::SchemaSet;

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
    pub(crate) run: Runtime<'x, W>,
    pub(crate) state: Result<Option<W::State>, RunError>,
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
        let started = crate::telemetry::now();
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
        crate::telemetry::run_ended::<W, _>(started, &ended);
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
            format: last.payload_format,
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
