//! What an agent sees of its run: the hops, loop uses, budget and time it
//! has left, and its own earlier turns, read from the record (so a resumed
//! run sees them too).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use workflow_core::ledger::MemoryLedger;
use workflow_core::prelude::*;

/// What the counter saw on one turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Seen {
    pub hop: u32,
    pub hops_left: u32,
    pub uses_left: Option<u32>,
    pub uses_left_by_name: Option<u32>,
    pub end_uses_left: Option<u32>,
    /// `(input.round, output.round)` of each earlier turn.
    pub earlier: Vec<(u32, u32)>,
    pub earlier_receivers: Vec<String>,
    pub tool_calls_left: Option<u64>,
    pub has_time_left: bool,
}

pub type Log = Arc<Mutex<Vec<Seen>>>;

#[derive(Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Rounds(pub u32);

#[workflow(entry = planner, output = Rounds, deps = Log)]
pub mod looping {
    use super::*;

    #[handoff]
    pub struct Round {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Count>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
        pub round: u32,
    }

    fn round(round: u32) -> Round {
        Round {
            op: Operation::new("count", ""),
            scope: Scope::new(authority::Count).until_hop(MAX_HOPS),
            evidence: vec![],
            open: vec![],
            stop: StopWhen::at_hop(MAX_HOPS),
            round,
        }
    }

    /// Keeps what the counter saw (the test's window into its context).
    #[tool(effect = read)]
    async fn note(seen: Seen, log: &Log) -> Result<(), ToolError> {
        log.lock().unwrap().push(seen);
        Ok(())
    }

    #[agent(owns = [Plan], to = [counter])]
    async fn planner(_n: u32, _cx: planner::Context<'_>) -> Result<planner::Next, Reject> {
        Ok(planner::Next::Counter(round(0)))
    }

    /// Goes round while its loop has uses left, then finishes by itself
    /// instead of being stopped at the bound.
    #[agent(owns = [Count], tools = [note], to = [counter(max = 3), END])]
    async fn counter(task: Round, cx: counter::Context<'_>) -> Result<counter::Next, Reject> {
        let earlier = cx.earlier_turns();
        let seen = Seen {
            hop: cx.hop(),
            hops_left: cx.hops_left(),
            uses_left: cx.uses_left::<counter::Agent>(),
            uses_left_by_name: cx.uses_left_to("counter"),
            end_uses_left: cx.uses_left_to("END"),
            earlier: earlier
                .iter()
                .map(|t| {
                    let input = t.input().expect("typed input").round;
                    let output = t
                        .output_to::<counter::Agent>()
                        .expect("to the counter")
                        .expect("typed output")
                        .round;
                    (input, output)
                })
                .collect(),
            earlier_receivers: earlier.iter().map(|t| t.receiver().to_owned()).collect(),
            tool_calls_left: cx.budget_left().and_then(|b| b.tool_calls),
            has_time_left: cx.time_left().is_some_and(|t| t > Duration::ZERO),
        };
        cx.call(tools::note, seen).await?;
        Ok(if cx.uses_left::<counter::Agent>() == Some(0) {
            counter::Next::End(Rounds(task.round))
        } else {
            counter::Next::Counter(round(task.round + 1))
        })
    }
}

fn expected() -> Vec<Seen> {
    // The hop cap is MAX_HOPS (at least the 5 turns this run takes: the
    // planner, the counter's first turn and its three rounds).
    const { assert!(looping::MAX_HOPS >= 5) };
    (0..4u32)
        .map(|k| Seen {
            hop: k + 1,
            hops_left: looping::MAX_HOPS - (k + 2),
            uses_left: Some(3 - k),
            uses_left_by_name: Some(3 - k),
            end_uses_left: None,
            earlier: (0..k).map(|j| (j, j + 1)).collect(),
            earlier_receivers: vec!["counter".to_owned(); k as usize],
            // One `note` call per earlier turn.
            tool_calls_left: Some(7 - u64::from(k)),
            has_time_left: true,
        })
        .collect()
}

fn executor(log: &Log, ledger: &Arc<MemoryLedger>) -> looping::Workflow {
    looping::Workflow::new((), log.clone())
        .with_budget(Budget::default().max_tool_calls(7))
        .with_deadline(Duration::from_secs(600))
        .with_ledger(ledger.clone())
}

#[tokio::test]
async fn an_agent_sees_its_hops_loop_uses_budget_and_time_left_and_finishes_by_itself() {
    let log = Log::default();
    let ledger = Arc::new(MemoryLedger::new());
    let done = executor(&log, &ledger).run(1).await.expect("completes");
    assert_eq!(
        done.output,
        Rounds(3),
        "ended itself when no round was left"
    );
    assert_eq!(*log.lock().unwrap(), expected());
}

#[tokio::test]
async fn without_limits_the_budget_and_time_left_are_none() {
    let log = Log::default();
    looping::Workflow::new((), log.clone())
        .run(1)
        .await
        .expect("completes");
    let seen = log.lock().unwrap();
    assert!(
        seen.iter()
            .all(|s| s.tool_calls_left.is_none() && !s.has_time_left)
    );
    // The hop cap defaults to MAX_HOPS.
    assert_eq!(seen.last().unwrap().hops_left, looping::MAX_HOPS - 5);
}

/// Stopped after any turn and resumed, the counter sees the same earlier
/// turns (read from the ledger's records) and the same uses left.
#[tokio::test]
async fn a_resumed_run_sees_the_same_earlier_turns_and_uses_left() {
    for turns in 1..=4 {
        let log = Log::default();
        let ledger = Arc::new(MemoryLedger::new());
        let wf = executor(&log, &ledger);
        let mut session = wf.start(1);
        for _ in 0..turns {
            session.step().await.expect("a turn");
        }
        let run_id = session.transcript().run_id();
        drop(session); // the crash
        let done = wf.resume(run_id).await.expect("resumes");
        assert_eq!(done.output, Rounds(3));
        let seen = log.lock().unwrap();
        // The counter's turns seen before the crash and after the resume.
        assert_eq!(*seen, expected(), "stopped after {turns} turns");
    }
}

#[test]
fn a_turns_context_fits_in_one_cache_line() {
    // Moved into the agent's future and held for its turn (issue 18): the
    // turn's numbers, scope and journal and the run's state are lent by the
    // runtime behind three pointers (a branch's are owned behind one).
    let size = std::mem::size_of::<looping::counter::Context<'static>>();
    assert!(size <= 64, "a turn's context takes {size} bytes");
}
