//! Tool calls across crashes: a process running payments (charge a card,
//! then mail the receipt) against an SQLite ledger is killed (SIGKILL) at
//! random points; then every run is resumed. A charge whose outcome the
//! ledger journaled is never requested again; one killed between the charge
//! and its journal entry is requested again under the same call id, which
//! the provider deduplicates: every run charges exactly once and completes
//! with the records of a run that was never killed.

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use examples::payment::{Provider, order, payment};
use workflow_core::ledger::{Ledger, LedgerRecord, SqliteLedger};

use crate::fixtures::{Lcg, scratch};

const KILLS: usize = 100;

/// The lines logged per run (the first word of each line).
fn per_run(path: &std::path::Path) -> BTreeMap<u64, usize> {
    let mut per_run = BTreeMap::new();
    let text = std::fs::read_to_string(path).unwrap_or_default();
    for line in text.lines() {
        let run: u64 = line
            .split(' ')
            .next()
            .and_then(|r| r.parse().ok())
            .unwrap_or_else(|| panic!("a line names its run: {line:?}"));
        *per_run.entry(run).or_default() += 1;
    }
    per_run
}

/// A run's records without what differs between runs.
fn shape(records: &[LedgerRecord]) -> Vec<String> {
    records
        .iter()
        .map(|r| {
            let tools: Vec<&str> = r
                .turn
                .iter()
                .flat_map(|t| &t.tool_calls)
                .map(|c| c.tool.as_ref())
                .collect();
            format!(
                "#{} {} -> {} {:?} {tools:?}",
                r.seq, r.from, r.to, r.receipt
            )
        })
        .collect()
}

#[tokio::test(flavor = "current_thread")]
async fn a_journaled_charge_is_never_made_again_after_a_kill() {
    let started = Instant::now();
    let dir = scratch("crash-tools");
    let path = dir.join("runs.db");
    let (requests, charges) = (dir.join("requests.log"), dir.join("charges.log"));
    let child = env!("CARGO_BIN_EXE_payment_child");
    let mut rng = Lcg(0x7001);
    for _ in 0..KILLS {
        let mut process = Command::new(child)
            .arg(&path)
            .arg(&requests)
            .arg(&charges)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the child starts");
        std::thread::sleep(Duration::from_micros(3_000 + rng.next_u64() % 15_000));
        process.kill().expect("SIGKILL");
        let output = process.wait_with_output().expect("the child is reaped");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.is_empty(), "the child failed on its own: {stderr}");
    }

    // The last children's leases run out: their runs can be resumed.
    std::thread::sleep(examples::campaign::CHILD_LEASE * 2);
    let ledger = Arc::new(SqliteLedger::open(&path).expect("the ledger reopens"));
    let runs = ledger.runs().expect("lists runs");
    let before = per_run(&requests);
    // The cashier's turn produces transfer #2: its calls are journaled there.
    let journaled = |run: u64| {
        ledger
            .tool_calls(run, 2)
            .expect("reads")
            .iter()
            .any(|c| c.call.tool == "charge")
    };
    let cut: Vec<(u64, bool)> = runs
        .iter()
        .filter(|run| ledger.records(**run).expect("reads").len() < 3)
        .map(|run| (*run, journaled(*run)))
        .collect();
    for (run, journaled) in &cut {
        if *journaled {
            assert_eq!(
                before.get(run),
                Some(&1),
                "run {run}: journaled, so charged"
            );
        }
    }

    let provider = Provider {
        requests: requests.clone(),
        charges: charges.clone(),
        mail_delay: Duration::ZERO,
    };
    let wf = payment::Workflow::new((), provider).with_ledger(ledger.clone());
    let clean = {
        let done = wf.run(order()).await.expect("a clean run");
        shape(&ledger.records(done.transcript.run_id()).expect("reads"))
    };
    for run in &runs {
        let done = wf
            .resume(*run)
            .await
            .unwrap_or_else(|a| panic!("run {run} resumes: {a}"));
        assert_eq!(done.output.charge_id, "ch_acme_4000");
        assert_eq!(
            shape(&ledger.records(*run).expect("reads")),
            clean,
            "run {run}"
        );
        assert_eq!(ledger.verify_run(*run), Ok(()));
    }

    let after = per_run(&requests);
    let mut served = 0;
    let mut in_doubt = 0;
    for (run, journaled) in &cut {
        let (was, is) = (before.get(run).copied(), after.get(run).copied());
        if *journaled {
            assert_eq!(
                is,
                Some(1),
                "run {run}: a journaled charge was requested again"
            );
            served += 1;
        } else if was == Some(1) {
            // Killed between the charge and its journal entry: the one
            // window where a call is made again, under the same call id.
            assert_eq!(is, Some(2), "run {run}");
            in_doubt += 1;
        } else {
            assert_eq!(is, Some(1), "run {run}");
        }
    }
    let made = per_run(&charges);
    for run in &runs {
        assert_eq!(made.get(run), Some(&1), "run {run} charged exactly once");
    }
    assert!(
        served > 0,
        "no kill landed between a journaled charge and the turn's end; the test proves nothing"
    );
    eprintln!(
        "{KILLS} kills, {} runs, {} cut mid-run: {served} with a journaled charge (served, not repeated), {in_doubt} killed between a charge and its journal entry (requested again, deduplicated by call id), in {:.1}s",
        runs.len(),
        cut.len(),
        started.elapsed().as_secs_f64()
    );
}
