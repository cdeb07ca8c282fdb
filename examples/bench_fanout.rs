//! The fan-out workload of the peer benchmarks on this library, printing the
//! same one-line format as `examples/peers/fanout_langgraph.py` and
//! `examples/peers/fanout_pydantic_graph.py`.
//!
//! Run: `cargo run --release --example bench_fanout -- WIDTH ROUNDS RUNS [SLEEP_MS]`
//! (WIDTH 3). With SLEEP_MS > 0 each branch body sleeps that long: a round
//! then takes about SLEEP_MS when the branches overlap, WIDTH * SLEEP_MS
//! when they are serialised.

use examples::fanout_bench::{Job, fanout3};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let parse = |i: usize, default: u64| -> u64 {
        match args.get(i) {
            None => default,
            Some(a) => a.parse().unwrap_or_else(|_| {
                eprintln!(
                    "usage: bench_fanout WIDTH ROUNDS RUNS [SLEEP_MS] (whole numbers), got `{a}`"
                );
                std::process::exit(2)
            }),
        }
    };
    let (width, rounds, runs, sleep_ms) = (
        parse(1, 3),
        parse(2, 10) as u32,
        parse(3, 2_000),
        parse(4, 0),
    );
    if width != 3 {
        eprintln!("bench_fanout: WIDTH {width} is not built (3 is)");
        std::process::exit(2);
    }
    let wf = fanout3::Workflow::new((), ());
    let job = Job { rounds, sleep_ms };
    // Warm up (allocator, caches) before timing, as a long-running service would be.
    for _ in 0..runs / 10 {
        if let Err(aborted) = wf.run(job).await {
            eprintln!("the warm-up run failed: {aborted}");
            std::process::exit(1);
        }
    }
    let start = std::time::Instant::now();
    for _ in 0..runs {
        match wf.run(job).await {
            Ok(done) => {
                assert_eq!(done.output.done, rounds);
                assert_eq!(u64::from(done.output.views), width * u64::from(rounds));
                // START -> begin -> dispatch, then per round: 3 starts, 3 outcomes, the
                // join (citing each branch), the join's handoff.
                assert_eq!(
                    done.transcript.len() as u64,
                    2 + u64::from(rounds) * (2 * width + 2)
                );
            }
            Err(aborted) => {
                eprintln!("{aborted}");
                std::process::exit(1);
            }
        }
    }
    let dt = start.elapsed().as_secs_f64();
    let branches = runs * u64::from(rounds) * width;
    println!(
        "workflow-core-fanout-{width}: {branches} branch turns in {dt:.3}s = {:.2} us/branch, {:.3} ms/round",
        dt / branches as f64 * 1e6,
        dt / (runs * u64::from(rounds)) as f64 * 1e3
    );
}
