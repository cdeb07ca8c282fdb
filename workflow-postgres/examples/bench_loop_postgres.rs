//! The reference workload of `shared/bench` (planner -> worker -> reviewer,
//! ROUNDS rounds) with every transition committed to a `PostgresLedger`,
//! printing the same one-line format as the peer scripts: the
//! per-transition commit cost beside LangGraph's PostgreSQL checkpointer
//! (`examples/compare_peers.sh postgres`, which starts a throwaway cluster
//! with fsync on).
//!
//! Run: `cargo run --release -p workflow-postgres --example bench_loop_postgres -- ROUNDS RUNS URL`

use std::sync::Arc;

use examples::loop_bench::counter;
use workflow_postgres::PostgresLedger;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: bench_loop_postgres ROUNDS RUNS URL";
    let number = |i: usize| -> u64 {
        match args.get(i).map(|a| a.parse()) {
            Some(Ok(n)) => n,
            _ => {
                eprintln!("{usage} (ROUNDS and RUNS whole numbers)");
                std::process::exit(2)
            }
        }
    };
    let (rounds, runs) = (number(1) as u32, number(2));
    let Some(url) = args.get(3) else {
        eprintln!("{usage}");
        std::process::exit(2)
    };
    let ledger = match PostgresLedger::connect(url) {
        Ok(ledger) => Arc::new(ledger),
        Err(e) => {
            eprintln!("cannot open the ledger at {url}: {e}");
            std::process::exit(2)
        }
    };
    let wf = counter::Workflow::new((), ()).with_ledger(ledger);
    // Warm up (allocator, caches, the server's plans), as bench_loop does.
    for _ in 0..runs / 10 {
        if let Err(aborted) = wf.run(rounds).await {
            eprintln!("the warm-up run failed: {aborted}");
            std::process::exit(1);
        }
    }
    let start = std::time::Instant::now();
    let mut transitions = 0u64;
    for _ in 0..runs {
        match wf.run(rounds).await {
            Ok(done) => {
                assert_eq!(done.output.done, rounds);
                assert_eq!(done.transcript.len() as u64, 2 + 2 * u64::from(rounds));
                transitions += 1 + 2 * u64::from(rounds);
            }
            Err(aborted) => {
                eprintln!("{aborted}");
                std::process::exit(1);
            }
        }
    }
    let dt = start.elapsed().as_secs_f64();
    println!(
        "workflow-core-postgres: {transitions} transitions in {dt:.3}s = {:.2} us/transition",
        dt / transitions as f64 * 1e6
    );
}
