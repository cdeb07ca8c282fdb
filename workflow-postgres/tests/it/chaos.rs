//! The chaos test: worker processes on one PostgreSQL queue, SIGKILLed at
//! random moments and replaced, one of them stopped (SIGSTOP) past its
//! lease and continued (SIGCONT). At the end every run completed, every
//! run's records verify and equal a clean run's (no transition lost or
//! duplicated), and every charge was made exactly once.
//!
//! The small version runs with the other tests (2 workers, 30 runs, 10
//! kills, one stop); the full one (4 workers, 500 runs, 100 kills) by
//!
//! ```text
//! WORKFLOW_CHAOS_FULL=1 cargo test -p workflow-postgres --test it chaos -- --nocapture
//! ```
//!
//! The worker processes are this test binary itself, run as the ignored
//! test `chaos::worker_process` with the database in its environment.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use examples::payment::{Provider, order, payment};
use workflow_core::ledger::Ledger;
use workflow_postgres::{PostgresLedger, Worker};

use crate::cluster::cluster_or_skip;
use crate::worker::shape;

const URL: &str = "WORKFLOW_CHAOS_URL";
const DIR: &str = "WORKFLOW_CHAOS_DIR";
const LEASE_MS: u64 = 500;
const MAIL_DELAY: Duration = Duration::from_millis(100);

fn provider(dir: &Path) -> Provider {
    Provider {
        requests: dir.join("requests.log"),
        charges: dir.join("charges.log"),
        mail_delay: MAIL_DELAY,
    }
}

/// A worker process of the chaos test (started by it; does nothing on its
/// own): drives payments until none is queued or held, then prints its
/// summary.
#[test]
#[ignore = "a worker process of the chaos test, started by it"]
fn worker_process() {
    let (Some(url), Some(dir)) = (std::env::var_os(URL), std::env::var_os(DIR)) else {
        panic!("run by the chaos test only ({URL} and {DIR} unset)");
    };
    let url = url.into_string().expect("a UTF-8 URL");
    let dir = PathBuf::from(dir);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ledger = Arc::new(PostgresLedger::connect(&url).expect("connects"));
    let concurrency = std::env::var("WORKFLOW_WORKER_CONCURRENCY")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(2);
    let summary = if std::env::var_os("WORKFLOW_WORKER_DEPLOY").is_some() {
        // The throughput test's workload: the main example, all in memory
        // but the ledger.
        use examples::deploy_workflow::{FakeCloud, deploy, staging_root};
        let executor = deploy::Workflow::new(staging_root(), FakeCloud::one_page());
        runtime.block_on(
            Worker::new(executor, ledger, &url)
                .concurrency(concurrency)
                .poll(Duration::from_millis(50))
                .until_drained()
                .run(),
        )
    } else {
        runtime.block_on(
            Worker::new(payment::Workflow::new((), provider(&dir)), ledger, &url)
                .concurrency(concurrency)
                .lease_ttl(Duration::from_millis(LEASE_MS))
                .poll(Duration::from_millis(100))
                .until_drained()
                .run(),
        )
    }
    .expect("runs");
    println!("CHAOS-SUMMARY fenced={} {summary}", summary.fenced);
}

/// A small xorshift: random enough for choosing victims and moments.
struct Dice(u64);

impl Dice {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

fn spawn(url: &str, dir: &Path, stdout: Stdio) -> Child {
    command(url, dir, stdout)
        .spawn()
        .expect("starts a worker process")
}

/// The command that runs [`worker_process`] in a process of its own.
pub fn command(url: &str, dir: &Path, stdout: Stdio) -> Command {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args([
            "--exact",
            "chaos::worker_process",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(URL, url)
        .env(DIR, dir)
        .env_remove("RUST_BACKTRACE")
        .stdout(stdout)
        .stderr(Stdio::null());
    command
}

fn signal(child: &Child, name: &str) {
    let status = Command::new("kill")
        .args([&format!("-{name}"), &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success(), "kill -{name}");
}

#[test]
fn killed_and_stalled_workers_lose_nothing_and_duplicate_nothing() {
    let cluster = cluster_or_skip!();
    let full = std::env::var_os("WORKFLOW_CHAOS_FULL").is_some_and(|v| v == "1");
    let (workers, runs, kills) = if full { (4, 500, 100) } else { (2, 30, 10) };
    let url = cluster.database("chaos");
    let dir = cluster.dir().join("chaos");
    std::fs::create_dir_all(&dir).unwrap();
    let ledger = PostgresLedger::connect(&url).expect("connects");

    // What a clean run records.
    let clean = {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let memory = Arc::new(workflow_core::ledger::MemoryLedger::new());
        let scratch = cluster.dir().join("clean");
        std::fs::create_dir_all(&scratch).unwrap();
        let run = runtime
            .block_on(
                payment::Workflow::new((), provider(&scratch))
                    .with_ledger(memory.clone())
                    .run(order()),
            )
            .expect("completes")
            .transcript
            .run_id();
        memory.records(run).unwrap()
    };
    let input = serde_json::to_string(&order()).unwrap();
    for run in 1..=runs {
        ledger.submit(run, payment::GRAPH.name, &input).unwrap();
    }

    let started = Instant::now();
    let mut dice = Dice(0x9e37_79b9_7f4a_7c15 ^ u64::from(std::process::id()));
    // Worker 0 is the one stopped and continued: never killed, its summary
    // read at the end.
    let stalled = spawn(&url, &dir, Stdio::piped());
    let mut pool: Vec<Child> = (1..workers)
        .map(|_| spawn(&url, &dir, Stdio::null()))
        .collect();
    let (mut killed, mut stopped, mut continued) = (0u64, None, false);
    while killed < kills && ledger.pending(&[payment::GRAPH.name]).unwrap() > 0 {
        assert!(started.elapsed() < Duration::from_secs(600), "stuck");
        std::thread::sleep(Duration::from_millis(20 + dice.below(60)));
        match stopped {
            None if killed >= kills / 3 => {
                signal(&stalled, "STOP");
                stopped = Some(Instant::now());
            }
            // Past its lease: its runs were taken over meanwhile.
            Some(at) if !continued && at.elapsed() > Duration::from_millis(LEASE_MS * 3) => {
                signal(&stalled, "CONT");
                continued = true;
            }
            _ => {}
        }
        let victim = dice.below(pool.len() as u64) as usize;
        pool[victim].kill().unwrap();
        pool[victim].wait().unwrap();
        killed += 1;
        pool[victim] = spawn(&url, &dir, Stdio::null());
    }
    if let Some(at) = stopped
        && !continued
    {
        std::thread::sleep(Duration::from_millis(LEASE_MS * 3).saturating_sub(at.elapsed()));
        signal(&stalled, "CONT");
        continued = true;
    }
    assert_eq!(killed, kills, "the queue drained before every kill");
    assert!(continued, "the stall happened");
    for mut child in pool {
        assert!(
            child.wait().unwrap().success(),
            "a worker drained and exited"
        );
    }
    let out = stalled.wait_with_output().unwrap();
    assert!(out.status.success());
    let out = String::from_utf8_lossy(&out.stdout);
    let fenced: u64 = out
        .split("CHAOS-SUMMARY fenced=")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("the stalled worker's summary: {out}"));
    let elapsed = started.elapsed();

    // Every run completed, verifies, and recorded what a clean run records.
    let counts = ledger.queue_counts().unwrap();
    assert_eq!((counts.done, counts.queued, counts.claimed), (runs, 0, 0));
    let mut transitions = 0;
    for run in 1..=runs {
        ledger
            .verify_run(run)
            .unwrap_or_else(|e| panic!("run {run}: {e}"));
        let records = ledger.records(run).unwrap();
        assert_eq!(shape(&records), shape(&clean), "run {run}");
        assert_eq!(ledger.outcome(run).unwrap().as_deref(), Some("completed"));
        transitions += records.len();
    }
    // Every charge exactly once (keyed by the tool call's id).
    let lines = |path: PathBuf| -> Vec<String> {
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    };
    let charges = lines(dir.join("charges.log"));
    let mut per_run: HashMap<String, u64> = HashMap::new();
    for line in &charges {
        *per_run
            .entry(line.split(' ').next().unwrap().to_owned())
            .or_default() += 1;
    }
    assert_eq!(per_run.len() as u64, runs, "every run charged");
    assert!(per_run.values().all(|n| *n == 1), "charged once each");
    let requests = lines(dir.join("requests.log")).len();
    let leases: i64 = cluster.rows("chaos", "SELECT sum(token) FROM workflow_leases")[0][0]
        .as_deref()
        .unwrap()
        .parse()
        .unwrap();

    println!(
        "chaos: {workers} worker processes, {runs} runs, {killed} SIGKILLs, 1 SIGSTOP of {} ms past a {LEASE_MS} ms lease",
        LEASE_MS * 3
    );
    println!(
        "chaos: {runs} completed, {runs} verify, {transitions} transitions = {runs} x {} (0 lost, 0 duplicated)",
        clean.len()
    );
    println!(
        "chaos: {} charges for {runs} runs (exactly once); {requests} charge requests (calls repeated after a kill were deduplicated by their call id)",
        charges.len()
    );
    println!(
        "chaos: {leases} claims in all ({} takeovers); the stalled worker was fenced off {fenced} run(s); {:.1} s",
        leases - runs as i64,
        elapsed.as_secs_f64()
    );
    assert!(fenced >= 1, "the stalled worker lost at least one run");
}
