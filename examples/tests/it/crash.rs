//! Crash safety: a process running workflows against an SQLite ledger is
//! killed (SIGKILL) at random points, 200 times; then every run found in the
//! ledger is verified and resumed, and each ends with exactly the records a
//! run that was never killed has.

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use examples::loop_bench::counter;
use workflow_core::ledger::{Ledger, LedgerRecord, MemoryLedger, SqliteLedger};

use crate::fixtures::{Lcg, scratch};

const ROUNDS: u32 = 5;
const KILLS: usize = 200;

/// The content of a run's records, without run id, times and hashes.
fn content(records: &[LedgerRecord]) -> Vec<(u32, u32, String, String, String, String)> {
    records
        .iter()
        .map(|r| {
            (
                r.seq,
                r.hop,
                r.from.to_string(),
                r.to.to_string(),
                r.payload.clone(),
                format!("{:?}", r.receipt),
            )
        })
        .collect()
}

#[tokio::test(flavor = "current_thread")]
async fn killed_runs_resume_to_exactly_the_records_of_a_clean_run() {
    let started = Instant::now();
    // The records of a run nobody killed.
    let memory = Arc::new(MemoryLedger::new());
    let clean = counter::Workflow::new((), ()).with_ledger(memory.clone());
    let clean_id = clean
        .run(ROUNDS)
        .await
        .expect("a clean run")
        .transcript
        .run_id();
    let expected = content(&memory.records(clean_id).unwrap());

    let dir = scratch("crash");
    let path = dir.join("runs.db");
    let child = env!("CARGO_BIN_EXE_crash_child");
    let mut rng = Lcg(0x5eed);
    for _ in 0..KILLS {
        let mut process = Command::new(child)
            .arg(&path)
            .arg(ROUNDS.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the child starts");
        // Wait until the child has opened the ledger, so that the random
        // moment is one of its work, whatever the machine's load.
        let mut ready = String::new();
        let stdout = process.stdout.take().expect("the child's stdout is piped");
        std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut ready)
            .expect("reads the child's first line");
        std::thread::sleep(Duration::from_micros(3_000 + rng.next_u64() % 20_000));
        process.kill().expect("SIGKILL"); // Child::kill is SIGKILL on Unix
        let output = process.wait_with_output().expect("the child is reaped");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.is_empty(), "the child failed on its own: {stderr}");
    }

    // The last children's leases run out: their runs can be resumed.
    std::thread::sleep(examples::campaign::CHILD_LEASE * 2);
    let ledger = Arc::new(SqliteLedger::open(&path).expect("the ledger reopens"));
    let runs = ledger.runs().expect("lists runs");
    assert!(
        runs.len() >= KILLS / 2,
        "only {} runs were started",
        runs.len()
    );
    let wf = counter::Workflow::new((), ()).with_ledger(ledger.clone());
    let mut resumed = 0;
    for run in &runs {
        assert_eq!(
            ledger.verify_run(*run),
            Ok(()),
            "run {run} verifies after the kills"
        );
        let before = ledger.records(*run).expect("reads").len();
        let done = wf
            .resume(*run)
            .await
            .unwrap_or_else(|a| panic!("run {run} resumes: {a}"));
        assert_eq!(done.output.done, ROUNDS);
        let records = ledger.records(*run).expect("reads");
        assert_eq!(content(&records), expected, "run {run}");
        assert_eq!(ledger.verify_run(*run), Ok(()));
        if records.len() > before {
            resumed += 1;
        }
    }
    assert!(
        resumed > 0,
        "no run was cut by a kill; the test proves nothing"
    );
    eprintln!(
        "{KILLS} kills, {} runs, {resumed} resumed mid-run, in {:.1}s",
        runs.len(),
        started.elapsed().as_secs_f64()
    );
}
