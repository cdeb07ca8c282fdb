//! Group commit: the appends of concurrent runs committed together, each
//! with its own checks, each caller answered only once its write is
//! committed, and waiting that leaves the tokio worker to other tasks.

use std::sync::mpsc;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use crate::ledger::{
    GENESIS, Lease, Ledger, LedgerError, LedgerRecord, PayloadFormat, SqliteLedger,
};
use crate::spec::{Endpoint, Receipt};

/// A fresh folder for this test, removed when dropped.
struct Scratch(std::path::PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn scratch(name: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!("wf-group-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temp dir");
    Scratch(dir)
}

/// `n` chained records of run `run_id`, their payloads tagged `tag`.
fn chain(run_id: u64, n: u32, tag: &str) -> Vec<LedgerRecord> {
    let mut prev = GENESIS.to_owned();
    (0..n)
        .map(|seq| {
            let mut r = LedgerRecord {
                workflow: "w".into(),
                run_id,
                seq,
                hop: seq,
                from: Endpoint::Start,
                to: Endpoint::End,
                payload_type: "String".into(),
                payload_format: PayloadFormat::Json,
                payload: hex::encode(format!("\"{tag}{seq}\"")),
                receipt: Receipt::Accepted,
                at_us: u64::from(seq),
                redelivery: false,
                turn: None,
                sender_scope: None,
                lineage: None,
                trace_id: String::new(),
                span_id: String::new(),
                root: None,
                mode: Default::default(),
                prev_hash: prev.clone(),
                hash: String::new(),
            };
            r.hash = r.compute_hash();
            prev = r.hash.clone();
            r
        })
        .collect()
}

/// Holds the writer thread in a read until `go` is sent (or 10 s pass):
/// whatever is sent meanwhile is committed as one group after it. Returns
/// once the writer is held; the handle says whether `go` came.
fn hold_writer(ledger: &Arc<SqliteLedger>) -> (mpsc::Sender<()>, std::thread::JoinHandle<bool>) {
    let (go, wait) = mpsc::channel::<()>();
    let (held, is_held) = mpsc::channel::<()>();
    let ledger = Arc::clone(ledger);
    let thread = std::thread::spawn(move || {
        ledger
            .writer
            .read(move |_| {
                let _ = held.send(());
                Ok(wait.recv_timeout(Duration::from_secs(10)).is_ok())
            })
            .expect("the read runs")
    });
    is_held
        .recv_timeout(Duration::from_secs(10))
        .expect("the writer is held");
    (go, thread)
}

#[test]
fn the_appends_of_200_concurrent_runs_share_groups_and_all_read_back_and_verify() {
    let dir = scratch("many");
    let path = dir.0.join("runs.db");
    let ledger = Arc::new(SqliteLedger::open(&path).expect("opens"));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .expect("a runtime");
    let (runs, per_run) = (200u64, 10u32);
    runtime.block_on(async {
        let tasks: Vec<_> = (1..=runs)
            .map(|run| {
                let ledger = Arc::clone(&ledger);
                tokio::spawn(async move {
                    let lease = Lease::fresh(run, "me", 60_000);
                    for record in chain(run, per_run, "x") {
                        ledger.append_leased(&record, &lease)?;
                        // Others' turns between two commits of a run.
                        tokio::task::yield_now().await;
                    }
                    Ok::<(), LedgerError>(())
                })
            })
            .collect();
        for task in tasks {
            task.await
                .expect("the task ends")
                .expect("every append commits");
        }
    });
    let counts = ledger.commit_counts();
    assert_eq!(counts.writes, runs * u64::from(per_run));
    assert!(
        counts.groups < counts.writes / 2,
        "concurrent appends share transactions: {counts:?}"
    );
    drop(ledger);
    // Read back through a new connection: what was answered `Ok` is in the file.
    let read = SqliteLedger::open_read_only(&path).expect("reopens");
    assert_eq!(read.runs().unwrap(), (1..=runs).collect::<Vec<_>>());
    for run in 1..=runs {
        assert_eq!(read.records(run).unwrap(), chain(run, per_run, "x"));
        read.verify_run(run).expect("verifies");
    }
}

/// A ledger call made from a thread of its own.
type Call = Box<dyn FnOnce(&SqliteLedger) -> Result<(), LedgerError> + Send>;

#[test]
fn a_stale_lease_and_a_duplicate_are_refused_alone_and_the_rest_of_their_group_commits() {
    let dir = scratch("refused");
    let path = dir.0.join("runs.db");
    let ledger = Arc::new(SqliteLedger::open(&path).expect("opens"));
    // Run 1 has its first record; run 2 was claimed by `a`, whose lease
    // ran out, then taken over by `b` (token 2).
    let one = chain(1, 2, "one");
    ledger
        .append_leased(&one[0], &Lease::fresh(1, "me", 60_000))
        .unwrap();
    let stale = ledger
        .claim(2, "a", Duration::from_millis(1))
        .expect("a claims");
    std::thread::sleep(Duration::from_millis(20));
    let taken = ledger
        .claim(2, "b", Duration::from_secs(60))
        .expect("b takes over");
    assert_eq!((stale.token, taken.token), (1, 2));
    let before = ledger.commit_counts();

    let (go, held) = hold_writer(&ledger);
    let two_by_a = chain(2, 1, "a");
    let two_by_b = chain(2, 1, "b");
    let start = Arc::new(Barrier::new(5));
    let send = |f: Call| {
        let (ledger, start) = (Arc::clone(&ledger), Arc::clone(&start));
        std::thread::spawn(move || {
            start.wait();
            f(&ledger)
        })
    };
    let (r1, lease1) = (one[1].clone(), Lease::fresh(1, "me", 60_000));
    let next_of_one = send(Box::new(move |l| l.append_leased(&r1, &lease1)));
    let first_of_one = one[0].clone();
    let duplicate = send(Box::new(move |l| l.append(&first_of_one)));
    let fenced = send(Box::new(move |l| l.append_leased(&two_by_a[0], &stale)));
    let by_b = two_by_b[0].clone();
    let taken_over = send(Box::new(move |l| l.append_leased(&by_b, &taken)));
    start.wait();
    // Time for the four to be sent while the writer is held.
    std::thread::sleep(Duration::from_millis(300));
    go.send(()).expect("the writer is released");
    assert!(held.join().unwrap(), "the writer was held until released");

    assert_eq!(next_of_one.join().unwrap(), Ok(()));
    assert_eq!(taken_over.join().unwrap(), Ok(()));
    assert_eq!(
        duplicate.join().unwrap(),
        Err(LedgerError::Duplicate { run_id: 1, seq: 0 })
    );
    assert!(
        matches!(fenced.join().unwrap(), Err(LedgerError::Fenced { .. })),
        "the stale lease is fenced"
    );
    let after = ledger.commit_counts();
    assert_eq!(
        (after.writes - before.writes, after.groups - before.groups),
        (4, 1),
        "the four writes were one group"
    );
    assert_eq!(ledger.records(1).unwrap(), one);
    assert_eq!(ledger.records(2).unwrap(), chain(2, 1, "b"));
    assert_eq!(
        ledger.lease(2).unwrap().map(|row| row.holder),
        Some("b".into())
    );
    ledger.verify_run(1).expect("run 1 verifies");
    ledger.verify_run(2).expect("run 2 verifies");
}

#[test]
fn a_run_waiting_for_its_commit_leaves_the_only_tokio_worker_to_other_runs() {
    let dir = scratch("worker");
    let ledger = Arc::new(SqliteLedger::open(dir.0.join("runs.db")).expect("opens"));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_time()
        .build()
        .expect("a runtime");
    let (go, held) = hold_writer(&ledger);
    runtime.block_on(async {
        let waiting = {
            let ledger = Arc::clone(&ledger);
            tokio::spawn(async move {
                let record = chain(1, 1, "w").remove(0);
                ledger.append(&record)
            })
        };
        // Runs on the same single worker while the append waits: without
        // `block_in_place` the worker would be blocked and `go` never sent
        // (the writer would give up after 10 s).
        let other = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            go.send(()).expect("the writer is released");
        });
        other.await.expect("the other task ends");
        assert_eq!(waiting.await.expect("the append ends"), Ok(()));
    });
    assert!(held.join().unwrap(), "the other task released the writer");
    assert_eq!(ledger.records(1).unwrap(), chain(1, 1, "w"));
}

#[test]
fn on_a_current_thread_runtime_a_commit_waits_in_place() {
    let ledger = SqliteLedger::in_memory().expect("opens");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    // `block_in_place` would panic here; the wait blocks the thread instead.
    runtime.block_on(async {
        for record in chain(7, 3, "c") {
            ledger.append(&record).expect("appends");
        }
    });
    assert_eq!(ledger.records(7).unwrap(), chain(7, 3, "c"));
    ledger.verify_run(7).expect("verifies");
}
