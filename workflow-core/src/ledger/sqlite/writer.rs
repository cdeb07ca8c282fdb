//! The thread that owns a ledger's connection and commits the writes of
//! every caller in groups: one transaction and one sync for all the writes
//! waiting when it is free (group commit).
//!
//! Callers send jobs over a channel and wait for their own answer. The
//! thread takes every job waiting, runs them in the order they came and
//! commits the writes among them together, each write under a savepoint of
//! its own: a write refused by its checks (a stale lease, a duplicate
//! record) is rolled back alone and answered with its error, and the others
//! commit. No write is answered before the transaction holding it is
//! committed (synced, at `synchronous = FULL`): a caller told `Ok` has its
//! write on disk. A read splits the group (the writes before it are
//! committed and answered first), so that every job sees what every job
//! sent before it did.
//!
//! Waiting does not stall a tokio worker: while other jobs are in flight,
//! on a multi-thread runtime, the caller waits inside
//! `tokio::task::block_in_place`, which hands the worker's other tasks to
//! another thread for the time of the wait; a caller alone in flight, on a
//! current-thread runtime (where `block_in_place` panics) or outside any
//! runtime blocks its thread, as a synchronous commit did.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;

use rusqlite::{Connection, TransactionBehavior};

use crate::spec::LedgerError;

/// At most this many writes are committed in one transaction.
const MAX_GROUP: usize = 1024;

/// A read: run alone, outside any transaction, once the writes sent before
/// it are committed. It sends its own answer.
type Read = Box<dyn FnOnce(&Connection) + Send>;

/// One job for the writer thread.
enum Job {
    Read(Read),
    Write(Box<dyn Write>),
}

/// A write, run inside the group's transaction under its own savepoint and
/// answered once the group is committed.
trait Write: Send {
    /// Runs the write; `false` when it was refused (its savepoint is then
    /// rolled back).
    fn run(&mut self, conn: &Connection) -> bool;
    /// Whether it must reach the disk before its answer (a lease's release
    /// need not: a lost release lets the lease run to its term).
    fn durable(&self) -> bool;
    /// Sends the answer: the write's own result, or the group's error when
    /// the group did not commit.
    fn answer(self: Box<Self>, group: &Result<(), LedgerError>);
}

/// A write whose closure gives a `T`.
struct Op<T, F> {
    write: Option<F>,
    durable: bool,
    outcome: Option<Result<T, LedgerError>>,
    reply: mpsc::SyncSender<Result<T, LedgerError>>,
}

impl<T, F> Write for Op<T, F>
where
    T: Send,
    F: FnOnce(&Connection) -> Result<T, LedgerError> + Send,
{
    fn run(&mut self, conn: &Connection) -> bool {
        let outcome = match self.write.take() {
            Some(write) => write(conn),
            None => Err(LedgerError::Storage("a ledger write was run twice".into())),
        };
        let ok = outcome.is_ok();
        self.outcome = Some(outcome);
        ok
    }

    fn durable(&self) -> bool {
        self.durable
    }

    fn answer(self: Box<Self>, group: &Result<(), LedgerError>) {
        let answer = match (self.outcome, group) {
            (Some(Err(refused)), _) => Err(refused),
            (Some(Ok(value)), Ok(())) => Ok(value),
            (Some(Ok(_)), Err(e)) | (None, Err(e)) => Err(e.clone()),
            (None, Ok(())) => Err(LedgerError::Storage("a ledger write was never run".into())),
        };
        // A caller that stopped waiting no longer needs the answer.
        let _ = self.reply.send(answer);
    }
}

/// The handle on a ledger's writer thread; dropping it lets the thread
/// finish the jobs sent and waits for it (the file is closed then).
pub(super) struct Writer {
    jobs: Option<mpsc::Sender<Job>>,
    thread: Option<JoinHandle<()>>,
    counts: Arc<Counts>,
    /// Jobs sent and not answered yet: a caller alone waits in place.
    in_flight: AtomicUsize,
}

/// How many writes and groups the writer has committed (or tried to).
#[derive(Default)]
struct Counts {
    writes: AtomicU64,
    groups: AtomicU64,
}

/// The writes a ledger's writer thread has run and the transactions
/// (groups) it committed them in, since the ledger was opened: with many
/// runs committing at once, fewer groups than writes
/// ([`SqliteLedger::commit_counts`](super::SqliteLedger::commit_counts)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CommitCounts {
    /// Writes run (appends, journal entries, claims, renewals, releases),
    /// refused ones included.
    pub writes: u64,
    /// Transactions they were run in.
    pub groups: u64,
}

fn storage(e: impl std::fmt::Display) -> LedgerError {
    LedgerError::Storage(e.to_string())
}

fn stopped() -> LedgerError {
    LedgerError::Storage("the ledger's writer thread stopped".into())
}

impl Writer {
    /// Starts the thread that owns `conn`. `synchronous` is the
    /// connection's setting, restored after a group that need not be
    /// durable.
    pub(super) fn start(conn: Connection, synchronous: &'static str) -> Result<Self, LedgerError> {
        let (jobs, queue) = mpsc::channel();
        let counts = Arc::new(Counts::default());
        let counted = Arc::clone(&counts);
        let thread = std::thread::Builder::new()
            .name("sqlite-ledger".into())
            .spawn(move || serve(conn, synchronous, queue, &counted))
            .map_err(|e| storage(format!("cannot start the ledger's writer thread: {e}")))?;
        Ok(Writer {
            jobs: Some(jobs),
            thread: Some(thread),
            counts,
            in_flight: AtomicUsize::new(0),
        })
    }

    /// The writes and groups committed so far.
    pub(super) fn counts(&self) -> CommitCounts {
        CommitCounts {
            writes: self.counts.writes.load(Ordering::Relaxed),
            groups: self.counts.groups.load(Ordering::Relaxed),
        }
    }

    /// Runs `read` on the connection once the writes sent before it are
    /// committed, and waits for its answer.
    pub(super) fn read<T, F>(&self, read: F) -> Result<T, LedgerError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, LedgerError> + Send + 'static,
    {
        let (reply, answer) = mpsc::sync_channel(1);
        self.send(Job::Read(Box::new(move |conn: &Connection| {
            let _ = reply.send(read(conn));
        })))
        .map(|alone| self.wait(answer, alone))?
    }

    /// Runs `write` in the next group's transaction under a savepoint of
    /// its own, and waits until the group is committed: `Ok` only once its
    /// write is durable (when `durable`; else committed), its own error
    /// when it was refused (rolled back alone), the group's error when the
    /// group did not commit.
    pub(super) fn write<T, F>(&self, durable: bool, write: F) -> Result<T, LedgerError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, LedgerError> + Send + 'static,
    {
        let (reply, answer) = mpsc::sync_channel(1);
        self.send(Job::Write(Box::new(Op {
            write: Some(write),
            durable,
            outcome: None,
            reply,
        })))
        .map(|alone| self.wait(answer, alone))?
    }

    /// Sends `job`; `true` when no other job was in flight.
    fn send(&self, job: Job) -> Result<bool, LedgerError> {
        let before = self.in_flight.fetch_add(1, Ordering::SeqCst);
        let sent = self
            .jobs
            .as_ref()
            .ok_or_else(stopped)
            .and_then(|jobs| jobs.send(job).map_err(|_| stopped()));
        if sent.is_err() {
            self.in_flight.fetch_sub(1, Ordering::SeqCst);
        }
        sent.map(|()| before == 0)
    }

    /// Waits for an answer. A caller whose job is the only one in flight
    /// waits in place: no other run is committing, and handing the tokio
    /// worker to another thread and back costs more than the commit. With
    /// others in flight, on a multi-thread runtime, it waits inside
    /// `block_in_place` so that the worker's other runs go on (and their
    /// commits join the next group); on a current-thread runtime (where
    /// `block_in_place` panics) or none, in place.
    fn wait<T>(
        &self,
        answer: mpsc::Receiver<Result<T, LedgerError>>,
        alone: bool,
    ) -> Result<T, LedgerError> {
        use tokio::runtime::{Handle, RuntimeFlavor};
        let received = match Handle::try_current() {
            Ok(handle) if !alone && handle.runtime_flavor() == RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(|| answer.recv())
            }
            _ => answer.recv(),
        };
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        received.unwrap_or_else(|_| Err(stopped()))
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        drop(self.jobs.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The writer thread: takes every job waiting, runs them in order, commits
/// the writes in groups.
fn serve(
    mut conn: Connection,
    synchronous: &'static str,
    queue: mpsc::Receiver<Job>,
    counts: &Counts,
) {
    let mut group: Vec<Box<dyn Write>> = Vec::new();
    while let Ok(first) = queue.recv() {
        let mut next = Some(first);
        while let Some(job) = next.take() {
            match job {
                Job::Write(write) => group.push(write),
                Job::Read(read) => {
                    commit(&mut conn, synchronous, &mut group, counts);
                    read(&conn);
                }
            }
            if group.len() >= MAX_GROUP {
                commit(&mut conn, synchronous, &mut group, counts);
            }
            next = queue.try_recv().ok();
        }
        commit(&mut conn, synchronous, &mut group, counts);
    }
}

/// Commits `group` in one transaction and answers each of its writes.
fn commit(
    conn: &mut Connection,
    synchronous: &'static str,
    group: &mut Vec<Box<dyn Write>>,
    counts: &Counts,
) {
    if group.is_empty() {
        return;
    }
    counts.groups.fetch_add(1, Ordering::Relaxed);
    counts
        .writes
        .fetch_add(group.len() as u64, Ordering::Relaxed);
    // A group of releases only need not wait for the disk.
    let lazy = synchronous != "NORMAL" && group.iter().all(|w| !w.durable());
    let result = if lazy {
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(storage)
            .and_then(|()| {
                let committed = run_group(conn, group);
                // Back to the ledger's setting before anything else.
                conn.pragma_update(None, "synchronous", synchronous)
                    .map_err(storage)
                    .and(committed)
            })
    } else {
        run_group(conn, group)
    };
    for write in group.drain(..) {
        write.answer(&result);
    }
}

/// Runs `group` in one IMMEDIATE transaction (the write lock taken first,
/// so that no other connection or process writes between a write's checks
/// and its write), each write under a savepoint.
fn run_group(conn: &mut Connection, group: &mut [Box<dyn Write>]) -> Result<(), LedgerError> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(storage)?;
    for write in group.iter_mut() {
        tx.execute_batch("SAVEPOINT write").map_err(storage)?;
        if write.run(&tx) {
            tx.execute_batch("RELEASE write").map_err(storage)?;
        } else {
            tx.execute_batch("ROLLBACK TO write; RELEASE write")
                .map_err(storage)?;
        }
    }
    tx.commit().map_err(storage)
}
