//! The fan-out workload of the peer benchmarks on this library, printing the
//! same one-line format as `examples/peers/fanout_langgraph.py` and
//! `examples/peers/fanout_pydantic_graph.py`.
//!
//! Run: `cargo run --release --example bench_fanout -- WIDTH ROUNDS RUNS [SLEEP_MS] [map]`
//!
//! WIDTH 3 runs the static fan-out (`parallel(view0, view1, view2)`); any
//! other WIDTH up to 64, or `map` as the fifth argument, the dynamic one
//! (`map(view, max = 64)` over WIDTH items). With SLEEP_MS > 0 each branch
//! body sleeps that long: a round then takes about SLEEP_MS when the
//! branches overlap, WIDTH * SLEEP_MS when they are serialised.

use examples::fanout_bench::{Job, MAX_WIDTH, Tally, fanout_map, fanout3};

/// One run of the form chosen: its output and record count.
async fn run_once(
    width: u64,
    map: bool,
    job: Job,
    static_wf: &fanout3::Workflow,
    map_wf: &fanout_map::Workflow,
) -> Result<(Tally, usize), String> {
    if map {
        let job = fanout_map::MapJob {
            width: width as u32,
            job,
        };
        let done = map_wf.run(job).await.map_err(|a| a.to_string())?;
        Ok((done.output, done.transcript.len()))
    } else {
        let done = static_wf.run(job).await.map_err(|a| a.to_string())?;
        Ok((done.output, done.transcript.len()))
    }
}

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
    if width == 0 || width as usize > MAX_WIDTH {
        eprintln!("bench_fanout: WIDTH must be between 1 and {MAX_WIDTH}, got {width}");
        std::process::exit(2);
    }
    let map = width != 3 || args.get(5).map(String::as_str) == Some("map");
    let static_wf = fanout3::Workflow::new((), ());
    let map_wf = fanout_map::Workflow::new((), ());
    let job = Job { rounds, sleep_ms };
    // Warm up (allocator, caches) before timing, as a long-running service would be.
    for _ in 0..runs / 10 {
        if let Err(aborted) = run_once(width, map, job, &static_wf, &map_wf).await {
            eprintln!("the warm-up run failed: {aborted}");
            std::process::exit(1);
        }
    }
    let start = std::time::Instant::now();
    for _ in 0..runs {
        match run_once(width, map, job, &static_wf, &map_wf).await {
            Ok((output, records)) => {
                assert_eq!(output.done, rounds);
                assert_eq!(u64::from(output.views), width * u64::from(rounds));
                // START -> begin -> dispatch, then per round: 3 starts, 3 outcomes, the
                // join (citing each branch), the join's handoff.
                assert_eq!(records as u64, 2 + u64::from(rounds) * (2 * width + 2));
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
        "workflow-core-{}-{width}: {branches} branch turns in {dt:.3}s = {:.2} us/branch, {:.3} ms/round",
        if map { "map" } else { "fanout" },
        dt / branches as f64 * 1e6,
        dt / (runs * u64::from(rounds)) as f64 * 1e3
    );
}
