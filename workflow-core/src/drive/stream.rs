//! A run as a stream of typed events (`Executor::run_streaming`): turns
//! starting, transfers, receipts, tool calls, model steps, a suspension and
//! the end, consumable while the run goes on.

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context as TaskContext, Poll};

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use crate::drive::{Aborted, Completed, Executor, Outcome, Session, Step};
use crate::run::{Progress, Runtime, Transcript};
use crate::spec::{Escalation, ModelCallRecord, Receipt, ToolCallRecord, TransferRecord, Workflow};

/// One thing that happened in a run, in the order it happened.
///
/// For each transfer of the record there is a [`Transfer`](Event::Transfer)
/// (its receipt then still `pending`, or already decided when it was
/// decided at once) and, once decided, a [`Receipt`](Event::Receipt); the
/// tool calls and model steps of a turn come before the transfer the turn
/// produced. A turn's start comes as it happens, before the events the
/// turn leaves in the record (the receipt of the transfer it works on
/// included).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Event {
    /// An agent's turn started (its input accepted, or a returned handoff
    /// to handle).
    TurnStarted {
        /// Agent turns completed before this one.
        hop: u32,
        /// The agent.
        agent: &'static str,
    },
    /// A tool call of a turn, as recorded.
    ToolCall {
        /// The agent that made it.
        agent: Cow<'static, str>,
        /// The sequence number of the record its turn produced.
        seq: u32,
        /// The call: arguments, outcome, attempts, duration.
        call: ToolCallRecord,
    },
    /// A model call of a turn, as recorded.
    ModelStep {
        /// The agent that made it.
        agent: Cow<'static, str>,
        /// The sequence number of the record its turn produced.
        seq: u32,
        /// The call: model, attempts, usage, outcome.
        call: ModelCallRecord,
    },
    /// A transfer was recorded: the record as it was then.
    Transfer(Box<TransferRecord>),
    /// The receipt of transfer `seq` was decided.
    Receipt {
        /// The transfer.
        seq: u32,
        /// The decision.
        receipt: Receipt,
    },
    /// The run is suspended: the transfer to `agent` waits for a person.
    Suspended {
        /// The receiver whose transfer waits.
        agent: &'static str,
        /// Why.
        reason: Escalation,
    },
    /// The run returned: the last event.
    Ended {
        /// The run.
        run_id: u64,
        /// How: `"completed"`, `"suspended"` or `"stopped"`.
        status: &'static str,
    },
}

/// The events of a run under way (`Executor::run_streaming`): a
/// [`Stream`](futures_core::Stream), or read one by one with
/// [`next`](Self::next). Ends after [`Event::Ended`]. The channel is
/// unbounded: a slow reader never slows the run, and no event is dropped.
#[derive(Debug)]
pub struct Events {
    rx: UnboundedReceiver<Event>,
}

impl Events {
    /// The next event; `None` once the run has returned and every event
    /// was read.
    pub async fn next(&mut self) -> Option<Event> {
        self.rx.recv().await
    }
}

impl futures_core::Stream for Events {
    type Item = Event;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Event>> {
        self.rx.poll_recv(cx)
    }
}

/// What of the transcript has been sent: transfers up to `sent`, receipts
/// of those decided.
struct Emitter {
    tx: UnboundedSender<Event>,
    /// Transfers sent so far.
    sent: usize,
    /// Transfers sent while their receipt was pending.
    pending: Vec<usize>,
}

impl Emitter {
    fn send(&self, event: Event) {
        // A reader that went away does not stop the run.
        let _ = self.tx.send(event);
    }

    /// Sends what `t` recorded since the last call, in record order: the
    /// receipts decided since, then each new transfer after its turn's tool
    /// and model calls, with its receipt when already decided.
    fn catch_up(&mut self, t: &Transcript) {
        let pending = std::mem::take(&mut self.pending);
        for seq in pending {
            self.receipt(t, seq);
        }
        while self.sent < t.len() {
            let seq = self.sent;
            self.sent += 1;
            if let Some(turn) = t.turn(seq) {
                for call in &turn.tool_calls {
                    self.send(Event::ToolCall {
                        agent: turn.agent.clone(),
                        seq: seq as u32,
                        call: call.clone(),
                    });
                }
                for call in &turn.model_calls {
                    self.send(Event::ModelStep {
                        agent: turn.agent.clone(),
                        seq: seq as u32,
                        call: call.clone(),
                    });
                }
            }
            match t.record(seq) {
                Ok(record) => {
                    let decided = record.receipt != Receipt::Pending;
                    self.send(Event::Transfer(Box::new(record)));
                    if decided {
                        self.receipt(t, seq);
                    } else {
                        self.pending.push(seq);
                    }
                }
                // Not decodable (a bug): the receipt still goes out.
                Err(_) => self.receipt(t, seq),
            }
        }
    }

    /// Sends the receipt of `seq` if it is decided, or keeps it pending.
    fn receipt(&mut self, t: &Transcript, seq: usize) {
        match t.receipt(seq) {
            Some(Receipt::Pending) | None => self.pending.push(seq),
            Some(receipt) => self.send(Event::Receipt {
                seq: seq as u32,
                receipt,
            }),
        }
    }
}

impl<W: Workflow> Executor<W> {
    /// Runs like [`run_outcome`](Self::run_outcome), sending each event as
    /// it happens: returns the events and the run. Await the run (it does
    /// nothing until then) while reading the events, for example with
    /// `tokio::join!` or by spawning the reader; the events end after
    /// [`Event::Ended`], when the run returns its [`Outcome`].
    ///
    /// The progress callback (`with_progress`) is still called.
    pub fn run_streaming(
        &self,
        input: W::Input,
    ) -> (Events, impl Future<Output = Outcome<W::Output>> + Send + '_) {
        let (tx, rx) = unbounded_channel();
        let run = async move {
            let mut emitter = Emitter {
                tx,
                sent: 0,
                pending: Vec::new(),
            };
            let turn_tx = Mutex::new(emitter.tx.clone());
            let user = self.progress.as_deref();
            let progress = move |p: &Progress| {
                if let Ok(tx) = turn_tx.lock() {
                    let _ = tx.send(Event::TurnStarted {
                        hop: p.hop,
                        agent: p.agent,
                    });
                }
                if let Some(user) = user {
                    user(p);
                }
            };
            let mut limits = self.limits();
            limits.progress = Some(&progress);
            let mut run = Runtime::new(&self.root, &self.deps, limits);
            let state = W::start(input, &mut run).map(Some);
            let mut session = Session { run, state };
            let started = crate::observe::telemetry::now();
            #[cfg(feature = "tracing")]
            let span = crate::drive::session::workflow_span::<W>(session.transcript().run_id());
            let drive = async {
                loop {
                    emitter.catch_up(session.transcript());
                    match session.step().await {
                        Ok(Step::Continue { .. }) => {}
                        Ok(Step::Finished(output)) => break Ok(output),
                        Err(error) => break Err(error),
                    }
                }
            };
            #[cfg(feature = "tracing")]
            let ended = tracing::Instrument::instrument(drive, span.clone()).await;
            #[cfg(not(feature = "tracing"))]
            let ended = drive.await;
            #[cfg(feature = "tracing")]
            if let Err(error) = &ended {
                span.record("error.type", crate::spec::error_type(error));
            }
            crate::observe::telemetry::run_ended::<W, _>(started, &ended);
            emitter.catch_up(session.transcript());
            let transcript = session.into_transcript();
            let run_id = transcript.run_id();
            let outcome = Outcome::from(match ended {
                Ok(output) => Ok(Completed { output, transcript }),
                Err(error) => {
                    let mut transcript = transcript;
                    transcript.shrink_to_fit();
                    Err(Aborted { error, transcript })
                }
            });
            let status = match &outcome {
                Outcome::Completed(_) => "completed",
                Outcome::AwaitingDecision(waiting) => {
                    emitter.send(Event::Suspended {
                        agent: waiting.agent,
                        reason: waiting.reason.clone(),
                    });
                    "suspended"
                }
                Outcome::Stopped(_) => "stopped",
            };
            emitter.send(Event::Ended { run_id, status });
            outcome
        };
        (Events { rx }, run)
    }
}
