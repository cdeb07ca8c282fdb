//! The reference workload of `shared/bench` on this library, printing the
//! same one-line format as the peer scripts.
//!
//! Run: `cargo run --release --example bench_loop -- ROUNDS RUNS`

use examples::loop_bench::counter;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let parse = |i: usize, default: u64| -> u64 {
        match args.get(i) {
            None => default,
            Some(a) => a.parse().unwrap_or_else(|_| {
                eprintln!("usage: bench_loop ROUNDS RUNS (whole numbers), got `{a}`");
                std::process::exit(2)
            }),
        }
    };
    let (rounds, runs) = (parse(1, 10) as u32, parse(2, 20_000));
    // `bench_loop ROUNDS RUNS sqlite`: every transition committed to an
    // SQLite ledger file (durable), to compare with LangGraph's checkpointer.
    // `sqlite-process`: durable against a killed process, not a lost machine.
    let durability = match args.get(3).map(String::as_str) {
        Some("sqlite") => Some(workflow_core::ledger::Durability::MachineCrash),
        Some("sqlite-process") => Some(workflow_core::ledger::Durability::ProcessCrash),
        _ => None,
    };
    let mut wf = counter::Workflow::new((), ());
    let name = if let Some(durability) = durability {
        let path = std::env::temp_dir().join(format!("bench_loop-{}.db", std::process::id()));
        let _ = std::fs::remove_file(&path);
        match workflow_core::ledger::SqliteLedger::open_with(&path, durability) {
            Ok(ledger) => wf = wf.with_ledger(std::sync::Arc::new(ledger)),
            Err(e) => {
                eprintln!("cannot open {}: {e}", path.display());
                std::process::exit(2);
            }
        }
        match durability {
            workflow_core::ledger::Durability::MachineCrash => "workflow-core-sqlite",
            workflow_core::ledger::Durability::ProcessCrash => "workflow-core-sqlite-process",
        }
    } else {
        "workflow-core"
    };
    // Warm up (allocator, caches) before timing, as a long-running service would be.
    for _ in 0..runs / 10 {
        if wf.run(rounds).await.is_err() {
            eprintln!("the warm-up run failed");
            std::process::exit(1);
        }
    }
    let start = std::time::Instant::now();
    let mut transitions = 0u64;
    let mut records = 0usize;
    for _ in 0..runs {
        match wf.run(rounds).await {
            Ok(done) => {
                assert_eq!(done.output.done, rounds);
                records += done.transcript.len();
                transitions += 1 + 2 * u64::from(rounds);
            }
            Err(aborted) => {
                eprintln!("{aborted}");
                std::process::exit(1);
            }
        }
    }
    let dt = start.elapsed().as_secs_f64();
    assert_eq!(records as u64, transitions + runs);
    println!(
        "{name}: {transitions} transitions in {dt:.3}s = {:.2} us/transition",
        dt / transitions as f64 * 1e6
    );
}
