//! Memory per run (issue 18, item 3), counted by a global allocator that
//! keeps the bytes currently allocated.
//!
//! The workload is the reference loop of `examples/src/loop_bench.rs`
//! (planner -> worker -> reviewer, 10 rounds, every contract on), copied here
//! with two changes that keep runs alive without changing what they record:
//!
//! * in flight: the reviewer, on its last turn, waits on a semaphore that
//!   never opens, so every future is suspended holding its whole transcript
//!   (21 records; the peak a run of this workload reaches);
//! * suspended: the worker escalates (`on_reject = escalate`) when its round
//!   is the one the input names, so the run stops as a suspension after 2 to
//!   20 records, and is kept as its `Aborted`.
//!
//! Run: `cargo run --release --example bench_memory -- [RUNS]` (10,000 by
//! default). Every figure is bytes live after building `RUNS` of them,
//! divided by `RUNS`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use workflow_core::prelude::*;

/// The system allocator, counting the bytes it holds.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call forwards to `System` with the same arguments; the
// counter is only bookkeeping.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as is.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as is.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as is.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded as is.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            LIVE.fetch_add(new_size, Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// Never opened: an in-flight run waits on it at its last turn.
static GATE: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(0);

/// The highest `rounds` a run may ask for.
pub const MAX_ROUNDS: u32 = 1000;

/// What a run ends with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Tally {
    /// Rounds done.
    pub done: u32,
}

/// The run's input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Plan {
    /// Rounds to do.
    pub rounds: u32,
    /// The round the worker escalates at (beyond `rounds`: never).
    pub halt: u32,
    /// Whether the reviewer waits on the gate at the last turn.
    pub wait: bool,
}

#[workflow(entry = planner, output = Tally)]
pub mod counter {
    use super::*;

    /// The work handed between agents.
    #[handoff]
    pub struct Work {
        /// Do one round.
        #[operation]
        pub op: Operation,
        /// Under the receiver's authority.
        #[authority]
        pub scope: Scope<authority::Count>,
        /// None needed.
        #[evidence]
        pub evidence: Vec<Evidence>,
        /// None left open.
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        /// No stop condition beyond the bound.
        #[stop]
        pub stop: StopWhen,
        /// Rounds left.
        pub remaining: u32,
        /// Rounds done.
        pub done: u32,
        /// The round to escalate at.
        pub halt: u32,
        /// Wait at the end.
        pub wait: bool,
    }

    /// The same work, for review.
    #[handoff]
    pub struct Review {
        /// Check the round.
        #[operation]
        pub op: Operation,
        /// Under the reviewer's authority.
        #[authority]
        pub scope: Scope<authority::Judge>,
        /// None needed.
        #[evidence]
        pub evidence: Vec<Evidence>,
        /// None left open.
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        /// No stop condition beyond the bound.
        #[stop]
        pub stop: StopWhen,
        /// Rounds left.
        pub remaining: u32,
        /// Rounds done.
        pub done: u32,
        /// The round to escalate at.
        pub halt: u32,
        /// Wait at the end.
        pub wait: bool,
    }

    fn work(
        scope: Scope<authority::Count>,
        remaining: u32,
        done: u32,
        halt: u32,
        wait: bool,
    ) -> Work {
        Work {
            op: Operation::new("round", ""),
            scope,
            evidence: Vec::new(),
            open: Vec::new(),
            stop: StopWhen::at_hop(MAX_HOPS),
            remaining,
            done,
            halt,
            wait,
        }
    }

    /// Starts the loop.
    #[agent(owns = [Begin], to = [worker])]
    #[pre(p.rounds <= MAX_ROUNDS, "at most MAX_ROUNDS rounds")]
    async fn planner(p: Plan, cx: planner::Context<'_>) -> Result<planner::Next, Reject> {
        let scope = cx.lease(authority::Count).as_long_as_mine();
        Ok(planner::Next::Worker(work(
            scope, p.rounds, 0, p.halt, p.wait,
        )))
    }

    /// Does one round; escalates at round `halt`.
    #[agent(owns = [Count], to = [reviewer], on_reject = escalate)]
    #[pre(task.remaining > 0, "there is a round left to do")]
    #[pre(task.done != task.halt, "not the round to escalate at")]
    async fn worker(task: Work, cx: worker::Context<'_>) -> Result<worker::Next, Reject> {
        Ok(worker::Next::Reviewer(Review {
            op: Operation::new("check", ""),
            scope: cx.lease(authority::Judge).as_long_as_mine(),
            evidence: task.evidence,
            open: task.open,
            stop: task.stop,
            remaining: task.remaining - 1,
            done: task.done + 1,
            halt: task.halt,
            wait: task.wait,
        }))
    }

    /// Sends the work back, or ends (after waiting on the gate, if asked).
    #[agent(owns = [Judge], to = [worker(max = 1000), END])]
    #[post(!matches!(out, reviewer::Next::End(t) if t.done == 0), "a run ends with work done")]
    async fn reviewer(r: Review, cx: reviewer::Context<'_>) -> Result<reviewer::Next, Reject> {
        Ok(if r.remaining == 0 {
            if r.wait {
                let _permit = GATE.acquire().await;
            }
            reviewer::Next::End(Tally { done: r.done })
        } else {
            let scope = cx.lease(authority::Count).as_long_as_mine();
            reviewer::Next::Worker(work(scope, r.remaining, r.done, r.halt, r.wait))
        })
    }
}

const ROUNDS: u32 = 10;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let runs: usize = match std::env::args().nth(1) {
        None => 10_000,
        Some(a) => a.parse().unwrap_or_else(|_| {
            eprintln!("usage: bench_memory [RUNS] (a whole number), got `{a}`");
            std::process::exit(2)
        }),
    };
    let wf = counter::Workflow::new((), ());
    // Warm up: one complete run, so that lazily built statics are not counted.
    let plan = |halt, wait| Plan {
        rounds: ROUNDS,
        halt,
        wait,
    };
    if let Err(a) = wf.run(plan(u32::MAX, false)).await {
        eprintln!("the warm-up run failed: {a}");
        std::process::exit(1);
    }
    println!("bench_memory: {runs} runs of the loop workload ({ROUNDS} rounds), bytes each");

    // In flight: every future polled once, to the gate at its last turn.
    let base = live();
    let mut futures: Vec<Pin<Box<dyn Future<Output = _> + '_>>> = Vec::with_capacity(runs);
    let mut cx = Context::from_waker(Waker::noop());
    for _ in 0..runs {
        let mut f: Pin<Box<dyn Future<Output = _>>> = Box::pin(wf.run(plan(u32::MAX, true)));
        if let Poll::Ready(r) = f.as_mut().poll(&mut cx) {
            eprintln!("a run did not wait at the gate: {:?}", r.map(|c| c.output));
            std::process::exit(1);
        }
        futures.push(f);
    }
    let in_flight = (live() - base) as f64 / runs as f64;
    let future_size = std::mem::size_of_val(&*futures[0]);
    println!("  run in flight (21 records):  {in_flight:>8.0}  (its future alone: {future_size})");
    drop(futures);

    // Suspended: kept as `Aborted`, escalated at round 0 and at round 9 (its
    // last).
    for halt in [0, ROUNDS - 1] {
        let base = live();
        let mut held = Vec::with_capacity(runs);
        for _ in 0..runs {
            match wf.run(plan(halt, false)).await {
                Ok(_) => {
                    eprintln!("a run did not escalate");
                    std::process::exit(1);
                }
                Err(a) => held.push(a),
            }
        }
        let per = (live() - base) as f64 / runs as f64;
        let records = held[0].transcript.len();
        let payloads: usize = (0..records)
            .filter_map(|i| held[0].transcript.payload_bytes(i))
            .map(<[u8]>::len)
            .sum();
        println!(
            "  suspended run as Aborted ({records:>2} records): {per:>8.0}  ({:.0} beyond its {payloads} payload bytes)",
            per - payloads as f64
        );

        // Its `Suspension`, in memory and as bytes.
        let base = live();
        let mut suspensions = Vec::with_capacity(runs);
        for a in &held {
            match a.suspension() {
                Some(s) => suspensions.push(s),
                None => {
                    eprintln!("an aborted run has no suspension: {}", a.error);
                    std::process::exit(1);
                }
            }
        }
        let per = (live() - base) as f64 / runs as f64;
        drop(held);
        let base = live();
        let bytes: Vec<Vec<u8>> = suspensions.iter().map(|s| s.to_bytes()).collect();
        let held_bytes = (live() - base) as f64 / runs as f64;
        println!(
            "  Suspension ({records:>2} records):             {per:>8.0}  ({:.0} per record); to_bytes: {} long, {held_bytes:.0} held",
            per / records as f64,
            bytes[0].len(),
        );
    }
}
