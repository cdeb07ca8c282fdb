//! Many concurrent runs of the reference workload (`shared/bench`: planner
//! -> worker -> reviewer, ROUNDS rounds) in one process, on a tokio runtime
//! with 2 worker threads: for 1, 10, 100 and 1,000 runs at once, in memory
//! (no ledger), with an SQLite ledger file synced at every commit
//! (`Durability::MachineCrash`) and with one durable against a killed
//! process (`Durability::ProcessCrash`). Prints runs/s, transitions/s, the
//! latency of one run (median and 99th percentile) and the CPU the process
//! used (of the 2 workers' 200 %).
//!
//! Run: `cargo run --release -p examples --example bench_concurrent -- [ROUNDS] [RUNS] [MODE...]`
//! (defaults: 10 rounds, 2,000 runs per level (at least 2 per concurrent
//! run), every mode: `memory`, `sqlite`, `sqlite-process`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use examples::loop_bench::counter;
use workflow_core::ledger::{Durability, SqliteLedger};

const LEVELS: [usize; 4] = [1, 10, 100, 1000];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number = |i: usize, default: u64| -> u64 {
        match args.get(i) {
            None => default,
            Some(a) => a.parse().unwrap_or_else(|_| {
                eprintln!("usage: bench_concurrent [ROUNDS] [RUNS] [MODE...], got `{a}`");
                std::process::exit(2)
            }),
        }
    };
    let rounds = number(0, 10) as u32;
    let runs = number(1, 2_000) as usize;
    let mut modes: Vec<&str> = args.iter().skip(2).map(String::as_str).collect();
    if modes.is_empty() {
        modes = vec!["memory", "sqlite", "sqlite-process"];
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| {
            eprintln!("cannot start the runtime: {e}");
            std::process::exit(1)
        });
    let dir = std::env::temp_dir().join(format!("bench_concurrent-{}", std::process::id()));
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("cannot create {}: {e}", dir.display());
        std::process::exit(1);
    }
    println!(
        "{:<16} {:>6} {:>6} {:>9} {:>14} {:>11} {:>11} {:>6}",
        "mode", "runs", "at once", "runs/s", "transitions/s", "p50 run", "p99 run", "cpu"
    );
    for mode in modes {
        for concurrent in LEVELS {
            let ledger = match mode {
                "memory" => None,
                "sqlite" | "sqlite-process" => {
                    let durability = if mode == "sqlite" {
                        Durability::MachineCrash
                    } else {
                        Durability::ProcessCrash
                    };
                    let path = dir.join(format!("{mode}-{concurrent}.db"));
                    let _ = std::fs::remove_file(&path);
                    match SqliteLedger::open_with(&path, durability) {
                        Ok(ledger) => Some(Arc::new(ledger)),
                        Err(e) => {
                            eprintln!("cannot open {}: {e}", path.display());
                            std::process::exit(1);
                        }
                    }
                }
                other => {
                    eprintln!("unknown mode `{other}`: memory, sqlite or sqlite-process");
                    std::process::exit(2);
                }
            };
            let mut wf = counter::Workflow::new((), ());
            if let Some(ledger) = ledger {
                wf = wf.with_ledger(ledger);
            }
            let wf = Arc::new(wf);
            let total = runs.max(2 * concurrent);
            // Warm up (allocator, caches, the file's first pages).
            runtime.block_on(level(&wf, rounds, concurrent.min(10), 20));
            let cpu_before = cpu_time();
            let start = Instant::now();
            let mut latencies = runtime.block_on(level(&wf, rounds, concurrent, total));
            let wall = start.elapsed();
            let cpu = cpu_time()
                .zip(cpu_before)
                .map(|(after, before)| after.saturating_sub(before));
            latencies.sort_unstable();
            let transitions = total as f64 * f64::from(1 + 2 * rounds);
            let secs = wall.as_secs_f64();
            let pct = |p: f64| latencies[((latencies.len() - 1) as f64 * p) as usize];
            println!(
                "{:<16} {:>6} {:>7} {:>9.0} {:>14.0} {:>11} {:>11} {:>6}",
                mode,
                total,
                concurrent,
                total as f64 / secs,
                transitions / secs,
                format!("{:.2} ms", pct(0.5).as_secs_f64() * 1e3),
                format!("{:.2} ms", pct(0.99).as_secs_f64() * 1e3),
                cpu.map_or("?".into(), |c| format!(
                    "{:.0}%",
                    c.as_secs_f64() / secs * 100.0
                )),
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs `total` runs, `concurrent` at a time (each of `concurrent` tasks
/// runs its share one after the other), and returns each run's latency.
async fn level(
    wf: &Arc<counter::Workflow>,
    rounds: u32,
    concurrent: usize,
    total: usize,
) -> Vec<Duration> {
    let mut tasks = Vec::with_capacity(concurrent);
    for t in 0..concurrent {
        let share = total / concurrent + usize::from(t < total % concurrent);
        let wf = Arc::clone(wf);
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(share);
            for _ in 0..share {
                let start = Instant::now();
                match wf.run(rounds).await {
                    Ok(done) => assert_eq!(done.output.done, rounds),
                    Err(aborted) => {
                        eprintln!("a run failed: {aborted}");
                        std::process::exit(1);
                    }
                }
                latencies.push(start.elapsed());
            }
            latencies
        }));
    }
    let mut all = Vec::with_capacity(total);
    for task in tasks {
        match task.await {
            Ok(latencies) => all.extend(latencies),
            Err(e) => {
                eprintln!("a task failed: {e}");
                std::process::exit(1);
            }
        }
    }
    all
}

/// The CPU time (user and system) the process used so far, from
/// `/proc/self/stat` (Linux; `None` elsewhere), in clock ticks of 10 ms
/// (`CLK_TCK` = 100 on Linux).
fn cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may hold spaces), from field 3.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(Duration::from_millis((utime + stime) * 10))
}
