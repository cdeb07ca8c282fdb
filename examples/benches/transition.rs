//! Criterion benchmarks of the transition overhead on the reference loop
//! workload: whole runs (divide by `1 + 2 * rounds` for per-transition
//! numbers), and the serialization of one payload for the record, the
//! largest single cost of a transition.
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

criterion_group!(benches, runs, record_payload);
criterion_main!(benches);
