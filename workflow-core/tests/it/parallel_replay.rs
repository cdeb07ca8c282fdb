//! Replaying a fan-out: compared per branch, whatever order the branches
//! finish in; a branch that parts from its recording is named.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

use serde::{Deserialize, Serialize};
use workflow_core::ledger::{Difference, Ledger, MemoryLedger};
use workflow_core::prelude::*;

/// Which branch bodies finished, in the order they did (not recorded: the
/// test's window on the order).
static FINISHED: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
/// Added to the slow branch's value: 0 when recording; set to show a branch
/// whose output differs on replay (as an unrecorded clock would).
static BIAS: AtomicU32 = AtomicU32::new(0);

/// How long each branch's tool waits, and the tool calls made.
pub struct Knobs {
    calls: AtomicU32,
}

/// A branch's view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Part {
    pub value: u32,
}

#[workflow(entry = lead, output = u32, deps = Knobs)]
pub mod race {
    use super::*;

    #[handoff]
    pub struct SlowAsk {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Slow>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
        pub value: u32,
    }

    #[handoff]
    pub struct FastAsk {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Fast>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
        pub value: u32,
    }

    /// Waits `ms` (live; a replay serves its recorded result at once).
    #[tool(effect = read)]
    async fn wait(ms: u64, knobs: &Knobs) -> Result<u64, ToolError> {
        knobs.calls.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
        Ok(ms)
    }

    #[agent(owns = [Lead], to = [parallel(slow, fast)])]
    async fn lead(value: u32, cx: lead::Context<'_>) -> Result<lead::Next, Reject> {
        Ok(lead::Next::Parallel(lead::Parallel {
            slow: SlowAsk {
                op: Operation::new("part", "slow"),
                scope: cx.lease(authority::Slow).until_hop(cx.hop() + 3),
                evidence: vec![],
                open: vec![],
                stop: StopWhen::at_hop(cx.hop() + 4),
                value,
            },
            fast: FastAsk {
                op: Operation::new("part", "fast"),
                scope: cx.lease(authority::Fast).until_hop(cx.hop() + 3),
                evidence: vec![],
                open: vec![],
                stop: StopWhen::at_hop(cx.hop() + 4),
                value: value + 1,
            },
        }))
    }

    #[agent(owns = [Slow], tools = [wait], to = [sum])]
    async fn slow(ask: SlowAsk, cx: slow::Context<'_>) -> Result<slow::Next, Reject> {
        let waited = cx.call(tools::wait, 40).await?;
        FINISHED.lock().unwrap().push("slow");
        Ok(slow::Next::Sum(Part {
            value: ask.value + waited as u32 + BIAS.load(Ordering::SeqCst),
        }))
    }

    #[agent(owns = [Fast], tools = [wait], to = [sum])]
    async fn fast(ask: FastAsk, cx: fast::Context<'_>) -> Result<fast::Next, Reject> {
        let waited = cx.call(tools::wait, 0).await?;
        FINISHED.lock().unwrap().push("fast");
        Ok(fast::Next::Sum(Part {
            value: ask.value + waited as u32,
        }))
    }

    #[agent(owns = [Sum], join = [slow: Part, fast: Part], to = [END])]
    async fn sum(parts: sum::Joined, _cx: sum::Context<'_>) -> Result<sum::Next, Reject> {
        let value = |b: &Branch<Part>| b.done().map_or(0, |p| p.value);
        Ok(sum::Next::End(value(&parts.slow) + value(&parts.fast)))
    }
}

fn executor() -> race::Workflow {
    race::Workflow::new(
        (),
        Knobs {
            calls: AtomicU32::new(0),
        },
    )
}

#[tokio::test]
async fn a_fan_out_replays_per_branch_whatever_order_its_branches_finish_in() {
    let ledger = std::sync::Arc::new(MemoryLedger::new());
    let recording = executor().with_ledger(ledger.clone());
    let done = recording.run(1).await.unwrap();
    // slow: 1 + its 40 ms; fast: 2 + its 0 ms.
    assert_eq!(done.output, 41 + 2);
    let records = ledger.records(done.transcript.run_id()).unwrap();
    // Recorded: the fast branch finished first.
    assert_eq!(*FINISHED.lock().unwrap(), ["fast", "slow"]);
    assert_eq!(recording.deps().calls.load(Ordering::SeqCst), 2);

    // Replayed: the tools' results are served at once, so the branches
    // finish in the order they started; the replay is identical anyway.
    FINISHED.lock().unwrap().clear();
    let replaying = executor();
    let report = replaying.replay(&records).await.unwrap();
    assert!(report.is_identical(), "{report}");
    assert_eq!(report.branch, None);
    assert_eq!(*FINISHED.lock().unwrap(), ["slow", "fast"]);
    // Every branch's tool call was served from the record, none made.
    assert_eq!(replaying.deps().calls.load(Ordering::SeqCst), 0);

    // The slow branch hands on another value on replay: the report names
    // its branch (branch 0 of the fan-out after record #0) and its outcome.
    BIAS.store(1, Ordering::SeqCst);
    let report = executor().replay(&records).await.unwrap();
    BIAS.store(0, Ordering::SeqCst);
    let divergence = report.divergence.clone().expect("the slow branch differs");
    assert_eq!(divergence.difference, Difference::Payload);
    // #0 the input, #1 #2 the starts, #3 the slow branch's outcome.
    assert_eq!(divergence.seq, 3);
    assert_eq!(
        report.branch,
        Some(Lineage::Outcome {
            fork: 0,
            branch: 0,
            parent: 1
        })
    );
    assert_eq!(
        report.to_string().lines().next().unwrap(),
        format!(
            "run {} diverges in the outcome of branch 0 of #0 (after #1), at transition #3: the payload differs",
            done.transcript.run_id()
        )
    );
}
