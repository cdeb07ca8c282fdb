//! Throughput of 1, 2 and 4 worker processes on one PostgreSQL, and how
//! claiming behaves with 10,000 queued runs. Measured, not asserted:
//!
//! ```text
//! cargo test --release -p workflow-postgres --test it scale -- --ignored --nocapture
//! ```
//!
//! The workload is the main example (the deploy workflow, its cloud faked in
//! memory): what is measured is the worker, the queue and the ledger.

use std::process::Stdio;
use std::time::{Duration, Instant};

use examples::deploy_workflow::{deploy, staging_goal};
use workflow_core::ledger::Ledger;
use workflow_postgres::{PostgresLedger, Settle};

use crate::cluster::cluster_or_skip;

#[test]
#[ignore = "a measurement: run it with --ignored --nocapture (in release)"]
fn throughput_with_1_2_and_4_workers_and_claims_with_10000_queued() {
    let cluster = cluster_or_skip!();
    let runs: u64 = std::env::var("WORKFLOW_SCALE_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1000);
    let input = serde_json::to_string(&staging_goal()).unwrap();
    for workers in [1, 2, 4] {
        let name = format!("scale{workers}");
        let url = cluster.database(&name);
        let ledger = PostgresLedger::connect(&url).expect("connects");
        for run in 1..=runs {
            ledger.submit(run, deploy::GRAPH.name, &input).unwrap();
        }
        let started = Instant::now();
        let children: Vec<_> = (0..workers)
            .map(|_| {
                let mut cmd = crate::chaos::command(&url, cluster.dir(), Stdio::null());
                cmd.env("WORKFLOW_WORKER_DEPLOY", "1")
                    .env("WORKFLOW_WORKER_CONCURRENCY", "4");
                cmd.spawn().expect("starts a worker")
            })
            .collect();
        for mut child in children {
            assert!(child.wait().unwrap().success());
        }
        let elapsed = started.elapsed().as_secs_f64();
        let transitions: usize = (1..=runs)
            .map(|run| ledger.records(run).unwrap().len())
            .sum();
        assert_eq!(ledger.queue_counts().unwrap().done, runs);
        let claims = &cluster.rows(&name, "SELECT sum(token) FROM workflow_leases")[0][0];
        println!(
            "scale: {workers} worker process(es) x 4 runs at once: {runs} runs in {elapsed:.2} s = {:.0} runs/s, {:.0} transitions/s ({} claims)",
            runs as f64 / elapsed,
            transitions as f64 / elapsed,
            claims.as_deref().unwrap_or("0")
        );
    }

    // Claiming with 10,000 queued runs: the first 1,000 claims, then 1,000
    // more once 9,000 have ended.
    let url = cluster.database("claims");
    let ledger = PostgresLedger::connect(&url).expect("connects");
    let started = Instant::now();
    for run in 1..=10_000 {
        ledger.submit(run, deploy::GRAPH.name, "{}").unwrap();
    }
    let submit = started.elapsed();
    let claim = |n: u32| -> (Duration, Duration) {
        let (mut total, mut worst) = (Duration::ZERO, Duration::ZERO);
        for _ in 0..n {
            let at = Instant::now();
            let claimed = ledger
                .claim_next(&[deploy::GRAPH.name], "bench", Duration::from_secs(60))
                .unwrap()
                .expect("a run to claim");
            let took = at.elapsed();
            total += took;
            worst = worst.max(took);
            ledger
                .settle(&claimed.lease, Settle::Done, "bench")
                .unwrap();
        }
        (total / n, worst)
    };
    let (first_mean, first_worst) = claim(1000);
    cluster.sql(
        "claims",
        "UPDATE workflow_queue SET state = 'done' WHERE run_id <= 9000",
    );
    let (late_mean, late_worst) = claim(1000);
    println!(
        "scale: 10,000 submitted in {:.2} s ({:.0}/s)",
        submit.as_secs_f64(),
        10_000.0 / submit.as_secs_f64()
    );
    println!(
        "scale: a claim with 10,000 queued: mean {:.2} ms, worst {:.2} ms; with 9,000 ended and 1,000 queued: mean {:.2} ms, worst {:.2} ms",
        first_mean.as_secs_f64() * 1e3,
        first_worst.as_secs_f64() * 1e3,
        late_mean.as_secs_f64() * 1e3,
        late_worst.as_secs_f64() * 1e3
    );
}
