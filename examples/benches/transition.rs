//! Criterion benchmarks of the transition overhead on the reference loop
//! workload: whole runs (divide by `1 + 2 * rounds` for per-transition
//! numbers), and the serialization of one payload for the record, the
//! largest single cost of a transition; a fan-out round (three branches at
//! once and their join, `examples::fanout_bench`); a transition made
//! durable in an SQLite ledger file (process-crash durability, so the
//! number is the library's and not the disk's sync); and the model loop's
//! overhead (`cx.tool_loop` over four replies of a model that costs
//! nothing, `examples::model_tools`).
//!
//! Run: `cargo bench -p examples --bench transition`

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use examples::loop_bench::counter;
use std::hint::black_box;
use workflow_core::prelude::*;

fn runs(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread runtime builds");
    let wf = counter::Workflow::new((), ());
    let mut group = c.benchmark_group("run");
    for rounds in [1u32, 10, 100] {
        group.throughput(Throughput::Elements(u64::from(1 + 2 * rounds)));
        group.bench_with_input(
            BenchmarkId::new("counter", rounds),
            &rounds,
            |b, &rounds| {
                b.iter(|| {
                    let done = rt
                        .block_on(wf.run(black_box(rounds)))
                        .expect("the run completes");
                    black_box(done.output)
                })
            },
        );
    }
    group.finish();
}

fn fan_out(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a current-thread runtime builds");
    let wf = examples::fanout_bench::fanout3::Workflow::new((), ());
    let mut group = c.benchmark_group("fan_out");
    let rounds = 10u32;
    // Per branch turn: each round is 3 branch turns, its dispatch and join.
    group.throughput(Throughput::Elements(u64::from(3 * rounds)));
    group.bench_function(BenchmarkId::new("three_branches", rounds), |b| {
        b.iter(|| {
            let job = examples::fanout_bench::Job {
                rounds,
                sleep_ms: 0,
            };
            let done = rt
                .block_on(wf.run(black_box(job)))
                .expect("the run completes");
            black_box(done.output)
        })
    });
    group.finish();
}

fn durable(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread runtime builds");
    let dir = std::env::temp_dir().join(format!("bench-durable-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let ledger = workflow_core::ledger::SqliteLedger::open_with(
        dir.join("ledger.db"),
        workflow_core::ledger::Durability::ProcessCrash,
    )
    .expect("the ledger opens");
    let wf = counter::Workflow::new((), ()).with_ledger(std::sync::Arc::new(ledger));
    let mut group = c.benchmark_group("durable");
    let rounds = 10u32;
    group.throughput(Throughput::Elements(u64::from(1 + 2 * rounds)));
    group.bench_function(BenchmarkId::new("sqlite_process_crash", rounds), |b| {
        b.iter(|| {
            let done = rt
                .block_on(wf.run(black_box(rounds)))
                .expect("the run completes");
            black_box(done.output)
        })
    });
    group.finish();
    drop(wf);
    let _ = std::fs::remove_dir_all(&dir);
}

fn record_payload(c: &mut Criterion) {
    let work = counter::Work {
        op: Operation::new("round", ""),
        scope: Scope::new(counter::authority::Count),
        evidence: Vec::new(),
        open: Vec::new(),
        stop: StopWhen::at_hop(10),
        remaining: 9,
        done: 1,
    };
    let mut buf = Vec::with_capacity(4096);
    c.bench_function(
        "serde_json, one Work payload (what a JSON record would cost)",
        |b| {
            b.iter(|| {
                buf.clear();
                serde_json::to_writer(&mut buf, black_box(&work)).expect("serializes");
                black_box(buf.len())
            })
        },
    );
}

/// The offline responder's replies, over and over: each run of the
/// incident workflow takes the next four (a model that costs nothing, so
/// the time is the loop's own).
struct Cycling {
    replies: Vec<workflow_core::llm::ModelReply>,
    next: std::sync::atomic::AtomicUsize,
}

impl workflow_core::llm::Model for Cycling {
    fn name(&self) -> &str {
        "cycling-responder"
    }

    fn complete<'a>(
        &'a self,
        _request: &'a workflow_core::llm::ModelRequest,
    ) -> workflow_core::llm::ModelFuture<'a> {
        let i = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let reply = self.replies[i % self.replies.len()].clone();
        Box::pin(async move { Ok(reply) })
    }
}

fn model_loop(c: &mut Criterion) {
    use examples::model_tools::{Ops, alert, incident, script};
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a current-thread runtime builds");
    let replies = script();
    let steps = replies.len() as u64;
    let model = std::sync::Arc::new(Cycling {
        replies,
        next: std::sync::atomic::AtomicUsize::new(0),
    });
    let wf = incident::Workflow::new((), Ops::default()).with_model(model);
    let mut group = c.benchmark_group("model_loop");
    // Per model step: each run is four replies (four tool calls asked for,
    // one refused, three made), then the answer checked and recorded.
    group.throughput(Throughput::Elements(steps));
    group.bench_function("incident_four_steps", |b| {
        b.iter(|| {
            let done = rt
                .block_on(wf.run(black_box(alert())))
                .expect("the run completes");
            black_box(done.output)
        })
    });
    group.finish();
}

criterion_group!(benches, runs, fan_out, durable, model_loop, record_payload);
criterion_main!(benches);
