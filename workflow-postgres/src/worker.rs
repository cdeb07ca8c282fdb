//! A worker: claims runs of one workflow from the queue and drives each with
//! the executor under its lease, until it is told to stop.
//!
//! It lives here, beside the queue it drains, rather than in
//! `workflow-core`: what it needs besides the executor — claiming with
//! `SKIP LOCKED`, waking on `LISTEN/NOTIFY`, settling a run in the queue —
//! is PostgreSQL's, and the core keeps no queue of its own.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures_util::stream::{FuturesUnordered, StreamExt};
use workflow_core::ledger::{Lease, Ledger, LedgerError};
use workflow_core::{Completed, Executor, RunError, Workflow};

use crate::queue::{Claimed, Settle};
use crate::{OpenError, PostgresLedger};

/// What a worker did, as it happens (for progress lines).
#[derive(Debug, Clone, PartialEq)]
pub enum WorkerEvent {
    /// A run was claimed: to start, to resume after its worker died or
    /// handed it back, or to apply a person's decision.
    Claimed {
        /// The run.
        run_id: u64,
        /// The lease's fencing token.
        token: u64,
        /// What the worker does with it.
        work: Work,
    },
    /// A run was settled in the queue.
    Settled {
        /// The run.
        run_id: u64,
        /// Where it stands now.
        settle: Settle,
        /// How it ended, in one line.
        outcome: String,
    },
    /// The worker lost a run's lease (another worker took it over after it
    /// expired): the run was dropped and nothing more of it committed.
    Fenced {
        /// The run.
        run_id: u64,
    },
    /// A run handed back unfinished at shutdown.
    HandedBack {
        /// The run.
        run_id: u64,
    },
    /// The queue could not be read or written (the worker carries on).
    Error(String),
}

/// What a worker does with a claimed run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Work {
    /// Start it: it has no records yet.
    Start,
    /// Resume it from its records.
    Resume,
    /// Apply the person's decision queued for it.
    Decide,
}

/// What a worker did in all, returned when it stops.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkerSummary {
    /// Runs claimed.
    pub claimed: u64,
    /// Of them, started.
    pub started: u64,
    /// Of them, resumed.
    pub resumed: u64,
    /// Of them, decided.
    pub decided: u64,
    /// Runs completed.
    pub completed: u64,
    /// Runs left waiting for a decision.
    pub suspended: u64,
    /// Runs that stopped with an error (their records say why).
    pub failed: u64,
    /// Runs whose lease this worker lost.
    pub fenced: u64,
    /// Runs handed back at shutdown.
    pub handed_back: u64,
    /// Errors reading or writing the queue.
    pub errors: u64,
}

impl fmt::Display for WorkerSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} claimed ({} started, {} resumed, {} decided): {} completed, {} suspended, {} failed, {} fenced, {} handed back, {} queue errors",
            self.claimed,
            self.started,
            self.resumed,
            self.decided,
            self.completed,
            self.suspended,
            self.failed,
            self.fenced,
            self.handed_back,
            self.errors
        )
    }
}

type Progress = dyn Fn(&WorkerEvent) + Send + Sync;

/// Claims queued runs of workflow `W` and drives them with an executor.
///
/// ```no_run
/// # async fn doc<W: workflow_core::Workflow>(executor: workflow_core::Executor<W>) -> Result<(), workflow_postgres::OpenError> {
/// use std::sync::Arc;
/// use workflow_postgres::{PostgresLedger, Worker};
///
/// let url = "postgres://app@db.internal/ledger";
/// let ledger = Arc::new(PostgresLedger::connect(url)?);
/// let summary = Worker::new(executor, ledger, url)
///     .concurrency(8)
///     .run_until(async { tokio::signal::ctrl_c().await.ok(); })
///     .await?;
/// println!("{summary}");
/// # Ok(()) }
/// ```
///
/// Each claimed run is driven under its lease: every record and journal
/// entry is committed only while the lease still holds the run
/// ([`Ledger::append_leased`]), and the worker renews the lease every third
/// of its term while a turn runs. A run whose lease was lost is dropped at
/// once (nothing more of it can commit anyway). A run whose worker died is
/// claimed again once its lease expires and resumed: the cut turn runs
/// again with its journaled tool calls served, not repeated. A suspended
/// run is settled as such and waits in the database; a decision queued for
/// it ([`PostgresLedger::decide`], from any process) is announced with
/// `NOTIFY`, which wakes an idle worker at once.
pub struct Worker<W: Workflow> {
    executor: Executor<W>,
    ledger: Arc<PostgresLedger>,
    url: String,
    concurrency: usize,
    lease_ttl: Duration,
    poll: Duration,
    grace: Duration,
    until_drained: bool,
    progress: Option<Arc<Progress>>,
}

impl<W: Workflow> Worker<W> {
    /// A worker driving runs with `executor`, which commits to `ledger`
    /// (attached here); `url` is the same database's, for the worker's own
    /// `LISTEN` connection. One run at a time unless
    /// [`concurrency`](Self::concurrency) says more.
    pub fn new(executor: Executor<W>, ledger: Arc<PostgresLedger>, url: impl Into<String>) -> Self {
        let lease_ttl = workflow_core::DEFAULT_LEASE_TTL;
        Worker {
            executor: executor
                .with_ledger(ledger.clone())
                .with_lease_ttl(lease_ttl),
            ledger,
            url: url.into(),
            concurrency: 1,
            lease_ttl,
            poll: Duration::from_secs(1),
            grace: Duration::from_secs(10),
            until_drained: false,
            progress: None,
        }
    }

    /// Drives up to `n` runs at once (at least 1).
    pub fn concurrency(mut self, n: usize) -> Self {
        self.concurrency = n.max(1);
        self
    }

    /// How long a claim holds a run without a heartbeat (default
    /// [`DEFAULT_LEASE_TTL`](workflow_core::DEFAULT_LEASE_TTL)): a run of a
    /// worker that died waits this long before another takes it over.
    pub fn lease_ttl(self, ttl: Duration) -> Self {
        Worker {
            executor: self.executor.with_lease_ttl(ttl),
            lease_ttl: ttl,
            ..self
        }
    }

    /// How often an idle worker looks at the queue when nothing was
    /// announced (expired leases are not announced): default 1 s.
    pub fn poll(mut self, every: Duration) -> Self {
        self.poll = every;
        self
    }

    /// How long a stopping worker lets its runs finish before it hands the
    /// rest back (default 10 s).
    pub fn grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// Stops on its own once no run of the workflow is queued or held
    /// (every one ended or waits for a decision), instead of waiting for
    /// more.
    pub fn until_drained(mut self) -> Self {
        self.until_drained = true;
        self
    }

    /// Calls `progress` with every [`WorkerEvent`].
    pub fn on_event(mut self, progress: impl Fn(&WorkerEvent) + Send + Sync + 'static) -> Self {
        self.progress = Some(Arc::new(progress));
        self
    }

    /// Works until it is drained ([`until_drained`](Self::until_drained))
    /// or forever.
    pub async fn run(self) -> Result<WorkerSummary, OpenError> {
        self.run_until(std::future::pending()).await
    }

    /// Works until `stop` completes (a signal, a token), then lets the
    /// runs it holds finish for the [`grace`](Self::grace) period, hands
    /// the others back to the queue (their leases released: another worker
    /// can claim them at once), and returns what it did. `Err` only when
    /// its `LISTEN` connection cannot be opened.
    pub async fn run_until(
        self,
        stop: impl Future<Output = ()>,
    ) -> Result<WorkerSummary, OpenError> {
        let listener = crate::listen::Listener::start(&self.url)?;
        let mut summary = WorkerSummary::default();
        let mut held: HashMap<u64, Lease> = HashMap::new();
        let mut active = FuturesUnordered::new();
        let workflows = [W::GRAPH.name];
        let holder = self.executor.holder().to_owned();
        tokio::pin!(stop);
        let mut stopping: Option<tokio::time::Instant> = None;
        loop {
            if stopping.is_none() {
                while active.len() < self.concurrency {
                    match self.ledger.claim_next(&workflows, &holder, self.lease_ttl) {
                        Ok(Some(claimed)) => {
                            let work = self.work_for(&claimed);
                            summary.claimed += 1;
                            match work {
                                Work::Start => summary.started += 1,
                                Work::Resume => summary.resumed += 1,
                                Work::Decide => summary.decided += 1,
                            }
                            self.emit(&WorkerEvent::Claimed {
                                run_id: claimed.lease.run_id,
                                token: claimed.lease.token,
                                work,
                            });
                            held.insert(claimed.lease.run_id, claimed.lease.clone());
                            active.push(self.drive(claimed, work));
                        }
                        Ok(None) => break,
                        Err(e) => {
                            summary.errors += 1;
                            self.emit(&WorkerEvent::Error(format!("claiming: {e}")));
                            break;
                        }
                    }
                }
                if active.is_empty() && self.until_drained && self.drained(&mut summary) {
                    break;
                }
            } else if active.is_empty() {
                break;
            }
            let deadline = stopping.unwrap_or_else(|| tokio::time::Instant::now() + self.poll);
            tokio::select! {
                Some((run_id, ended)) = active.next(), if !active.is_empty() => {
                    if let Some(lease) = held.remove(&run_id) {
                        self.settle(&lease, ended, &mut summary);
                    }
                }
                () = listener.notified(), if stopping.is_none() => {}
                () = &mut stop, if stopping.is_none() => {
                    stopping = Some(tokio::time::Instant::now() + self.grace);
                }
                () = tokio::time::sleep_until(deadline) => {
                    if stopping.is_some() {
                        break;
                    }
                }
            }
        }
        // Runs still held past the grace period: their futures are dropped
        // (which releases their leases), then they are handed back.
        drop(active);
        for (run_id, lease) in held {
            match self
                .ledger
                .settle(&lease, Settle::Queued, "handed back at shutdown")
            {
                Ok(()) => {
                    summary.handed_back += 1;
                    self.emit(&WorkerEvent::HandedBack { run_id });
                }
                Err(LedgerError::Fenced { .. }) => {}
                Err(e) => {
                    summary.errors += 1;
                    self.emit(&WorkerEvent::Error(format!(
                        "handing back run {run_id}: {e}"
                    )));
                }
            }
        }
        Ok(summary)
    }

    /// Whether no run of the workflow is queued or held.
    fn drained(&self, summary: &mut WorkerSummary) -> bool {
        match self.ledger.pending(&[W::GRAPH.name]) {
            Ok(pending) => pending == 0,
            Err(e) => {
                summary.errors += 1;
                self.emit(&WorkerEvent::Error(format!("counting the queue: {e}")));
                false
            }
        }
    }

    fn emit(&self, event: &WorkerEvent) {
        if let Some(progress) = &self.progress {
            progress(event);
        }
    }

    /// What to do with a claimed run: apply its decision if it still
    /// waits for one; start it if it has no records; resume it otherwise
    /// (a decision whose turn was cut is in the records already).
    fn work_for(&self, claimed: &Claimed) -> Work {
        let run_id = claimed.lease.run_id;
        match self.ledger.head(run_id) {
            Ok(None) => Work::Start,
            _ if claimed.decision.is_some() && self.executor.suspension(run_id).is_ok() => {
                Work::Decide
            }
            _ => Work::Resume,
        }
    }

    /// Drives one claimed run to its end under its lease, renewing the
    /// lease while it works; `Ended::Fenced` as soon as the lease is lost.
    fn drive(
        &self,
        claimed: Claimed,
        work: Work,
    ) -> Pin<Box<dyn Future<Output = (u64, Ended)> + '_>> {
        Box::pin(async move {
            let lease = claimed.lease.clone();
            let run_id = lease.run_id;
            let run = async {
                match (work, claimed.decision) {
                    (Work::Decide, Some(decision)) => Ended::of(
                        self.executor.decide_leased(lease.clone(), decision).await,
                        true,
                    ),
                    (Work::Start, _) => match serde_json::from_str::<W::Input>(&claimed.input) {
                        Ok(input) => {
                            Ended::of(self.executor.run_leased(lease.clone(), input).await, false)
                        }
                        Err(e) => Ended::BadInput(e.to_string()),
                    },
                    _ => Ended::of(self.executor.resume_leased(lease.clone()).await, false),
                }
            };
            tokio::pin!(run);
            let beat = (self.lease_ttl / 3).max(Duration::from_millis(10));
            loop {
                tokio::select! {
                    ended = &mut run => return (run_id, ended),
                    () = tokio::time::sleep(beat) => {
                        if let Err(LedgerError::Fenced { .. }) = self.ledger.renew(&lease) {
                            return (run_id, Ended::Fenced);
                        }
                    }
                }
            }
        })
    }

    /// Settles a run that ended in the queue, and counts it.
    fn settle(&self, lease: &Lease, ended: Ended, summary: &mut WorkerSummary) {
        let run_id = lease.run_id;
        let (settle, outcome) = match ended {
            Ended::Fenced => {
                summary.fenced += 1;
                self.emit(&WorkerEvent::Fenced { run_id });
                return;
            }
            Ended::Run(Ok(()), _) => {
                summary.completed += 1;
                (Settle::Done, "completed".to_owned())
            }
            Ended::Run(Err(error), decided) => match &*error {
                RunError::Suspended { agent, .. } => {
                    summary.suspended += 1;
                    (
                        Settle::Suspended,
                        format!("waiting for a decision at {agent}"),
                    )
                }
                RunError::Decision(why) if decided => {
                    summary.suspended += 1;
                    (
                        Settle::Suspended,
                        format!("the decision was refused: {why}"),
                    )
                }
                error => {
                    summary.failed += 1;
                    (Settle::Done, format!("stopped: {error}"))
                }
            },
            Ended::BadInput(why) => {
                summary.failed += 1;
                (
                    Settle::Done,
                    format!("the submitted input does not decode: {why}"),
                )
            }
        };
        match self.ledger.settle(lease, settle, &outcome) {
            Ok(()) => self.emit(&WorkerEvent::Settled {
                run_id,
                settle,
                outcome,
            }),
            Err(LedgerError::Fenced { .. }) => {
                summary.fenced += 1;
                self.emit(&WorkerEvent::Fenced { run_id });
            }
            Err(e) => {
                summary.errors += 1;
                self.emit(&WorkerEvent::Error(format!("settling run {run_id}: {e}")));
            }
        }
    }
}

/// How a driven run ended.
enum Ended {
    /// Completed, or the error that stopped it (and whether a decision was
    /// being applied).
    Run(Result<(), Box<RunError>>, bool),
    /// Its lease was lost while it ran.
    Fenced,
    /// Its submitted input does not decode as the workflow's input.
    BadInput(String),
}

impl Ended {
    /// The executor's answer; a commit refused for a lost lease is
    /// `Fenced`.
    fn of<O>(answer: Result<Completed<O>, workflow_core::Aborted>, decided: bool) -> Ended {
        match answer {
            Ok(_) => Ended::Run(Ok(()), decided),
            Err(workflow_core::Aborted {
                error: RunError::Ledger(LedgerError::Fenced { .. }),
                ..
            }) => Ended::Fenced,
            Err(aborted) => Ended::Run(Err(Box::new(aborted.error)), decided),
        }
    }
}
