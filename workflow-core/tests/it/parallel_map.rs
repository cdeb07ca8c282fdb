//! A dynamic fan-out (`to = [map(worker, max = 16)]`) after a static one
//! (`parallel(left, right)`), and a quorum join (`quorum = 2`): the map's
//! outcomes reach its join in the order of the list whatever order they
//! finished in, a list over the bound is refused and recorded, and a quorum
//! cancels the branches still running, recorded as cancelled.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use workflow_core::prelude::*;

/// What one item's worker hands the gatherer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Done {
    pub index: u32,
}

/// Half of the list, as a static branch hands it to the judge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Part {
    pub delays: Vec<u64>,
}

#[workflow(entry = lead, output = Vec<String>)]
pub mod mixed {
    use super::*;

    #[handoff]
    pub struct HalfAsk {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Halves>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
        pub delays: Vec<u64>,
    }

    #[handoff]
    pub struct OtherHalfAsk {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::OtherHalf>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
        pub delays: Vec<u64>,
    }

    #[handoff]
    pub struct DispatchAsk {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Dispatch>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
        pub delays: Vec<u64>,
    }

    #[handoff]
    pub struct Job {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Work>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
        pub index: u32,
        pub delay_ms: u64,
    }

    #[agent(owns = [Lead], to = [parallel(left, right)])]
    async fn lead(delays: Vec<u64>, cx: lead::Context<'_>) -> Result<lead::Next, Reject> {
        let half = delays.len() / 2;
        Ok(lead::Next::Parallel(lead::Parallel {
            left: HalfAsk {
                op: Operation::new("split", "left"),
                scope: cx.lease(authority::Halves).until_hop(cx.hop() + 3),
                evidence: vec![],
                open: vec![],
                stop: StopWhen::at_hop(cx.hop() + 19),
                delays: delays[..half].to_vec(),
            },
            right: OtherHalfAsk {
                op: Operation::new("split", "right"),
                scope: cx.lease(authority::OtherHalf).until_hop(cx.hop() + 3),
                evidence: vec![],
                open: vec![],
                stop: StopWhen::at_hop(cx.hop() + 19),
                delays: delays[half..].to_vec(),
            },
        }))
    }

    #[agent(owns = [Halves], to = [judge])]
    async fn left(ask: HalfAsk, _cx: left::Context<'_>) -> Result<left::Next, Reject> {
        Ok(left::Next::Judge(Part { delays: ask.delays }))
    }

    #[agent(owns = [OtherHalf], to = [judge])]
    async fn right(ask: OtherHalfAsk, _cx: right::Context<'_>) -> Result<right::Next, Reject> {
        Ok(right::Next::Judge(Part { delays: ask.delays }))
    }

    #[agent(owns = [Judge], join = [left: Part, right: Part], to = [dispatch])]
    async fn judge(parts: judge::Joined, cx: judge::Context<'_>) -> Result<judge::Next, Reject> {
        let mut delays = Vec::new();
        for part in [parts.left, parts.right] {
            match part {
                Branch::Done(part) => delays.extend(part.delays),
                other => return Err(Reject::because(format!("a half is missing: {other}"))),
            }
        }
        Ok(judge::Next::Dispatch(DispatchAsk {
            op: Operation::new("dispatch", "every item"),
            scope: cx.lease(authority::Dispatch).until_hop(cx.hop() + 18),
            evidence: vec![],
            open: vec![],
            stop: StopWhen::at_hop(cx.hop() + 19),
            delays,
        }))
    }

    #[agent(owns = [Dispatch], to = [map(worker, max = 16)])]
    async fn dispatch(
        ask: DispatchAsk,
        cx: dispatch::Context<'_>,
    ) -> Result<dispatch::Next, Reject> {
        let jobs = ask.delays.iter().enumerate().map(|(i, &delay_ms)| Job {
            op: Operation::new("work", format!("item {i}")),
            scope: cx.lease(authority::Work).until_hop(cx.hop() + 17),
            evidence: vec![],
            open: vec![],
            stop: StopWhen::at_hop(cx.hop() + 19),
            index: i as u32,
            delay_ms,
        });
        Ok(dispatch::Next::Map(jobs.collect()))
    }

    #[agent(owns = [Work], to = [gather])]
    async fn worker(job: Job, _cx: worker::Context<'_>) -> Result<worker::Next, Reject> {
        tokio::time::sleep(Duration::from_millis(job.delay_ms)).await;
        if job.delay_ms == 13 {
            return Err(Reject::because("thirteen"));
        }
        Ok(worker::Next::Gather(Done { index: job.index }))
    }

    #[agent(owns = [Gather], join = [worker: [Done]], to = [END])]
    async fn gather(
        done: gather::Joined,
        _cx: gather::Context<'_>,
    ) -> Result<gather::Next, Reject> {
        Ok(gather::Next::End(
            done.worker
                .iter()
                .map(|b| match b {
                    Branch::Done(d) => format!("done {}", d.index),
                    other => other.to_string(),
                })
                .collect(),
        ))
    }
}

/// The run's records as `from -> to status`.
fn lines(t: &workflow_core::Transcript) -> Vec<String> {
    t.records()
        .unwrap()
        .into_iter()
        .map(|r| {
            let status = match r.receipt {
                Receipt::Accepted => "accepted".to_owned(),
                Receipt::TurnFailed { error } => format!("turn_failed: {error}"),
                other => format!("{other:?}"),
            };
            format!("{} -> {} {status}", r.from, r.to)
        })
        .collect()
}

#[test]
fn max_hops_counts_every_possible_item_of_the_map() {
    // lead, two halves, judge, dispatch, up to 16 workers, gather.
    assert_eq!(mixed::MAX_HOPS, 1 + 2 + 1 + 1 + 16 + 1);
}

#[tokio::test(start_paused = true)]
async fn the_join_gets_the_outcomes_in_list_order_whatever_order_they_finished_in() {
    let wf = mixed::Workflow::new((), ());
    let started = tokio::time::Instant::now();
    // The first item finishes last, the last first.
    let done = wf.run(vec![50, 40, 30, 20, 10, 5]).await.unwrap();
    assert_eq!(started.elapsed(), Duration::from_millis(50));
    assert_eq!(
        done.output,
        ["done 0", "done 1", "done 2", "done 3", "done 4", "done 5"]
    );
    // Starts in list order, then outcomes in list order, then the join.
    let records = lines(&done.transcript);
    let want: Vec<String> = [
        "START -> lead accepted",
        "lead -> left accepted",
        "lead -> right accepted",
        "left -> judge accepted",
        "right -> judge accepted",
        "lead -> judge accepted",
        "judge -> dispatch accepted",
    ]
    .into_iter()
    .map(str::to_owned)
    .chain((0..6).map(|_| "dispatch -> worker accepted".to_owned()))
    .chain((0..6).map(|_| "worker -> gather accepted".to_owned()))
    .chain([
        "dispatch -> gather accepted".to_owned(),
        "gather -> END accepted".to_owned(),
    ])
    .collect();
    assert_eq!(records, want);
    // Each outcome names its item's branch, in order.
    let outcomes: Vec<_> = (13..19)
        .map(|i| done.transcript.lineage(i).cloned())
        .collect();
    for (k, l) in outcomes.iter().enumerate() {
        assert_eq!(
            l.as_ref(),
            Some(&Lineage::Outcome {
                fork: 6,
                branch: k as u16,
                parent: 7 + k as u32
            })
        );
    }
}

#[tokio::test(start_paused = true)]
async fn sixteen_items_that_sleep_10_ms_take_10_ms() {
    let wf = mixed::Workflow::new((), ());
    let started = tokio::time::Instant::now();
    let done = wf.run(vec![10; 16]).await.unwrap();
    assert_eq!(started.elapsed(), Duration::from_millis(10));
    assert_eq!(done.output.len(), 16);
    assert!(done.output.iter().all(|o| o.starts_with("done")));
}

#[tokio::test(start_paused = true)]
async fn a_failed_item_is_its_outcome_and_an_empty_list_joins_nothing() {
    let wf = mixed::Workflow::new((), ());
    let done = wf.run(vec![1, 13, 2]).await.unwrap();
    assert_eq!(
        done.output,
        [
            "done 0",
            "failed: agent `worker` failed: thirteen",
            "done 2"
        ]
    );
    let done = mixed::Workflow::new((), ()).run(vec![]).await.unwrap();
    assert!(done.output.is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_list_over_the_bound_is_refused_and_recorded_never_cut() {
    let wf = mixed::Workflow::new((), ());
    let failed = wf.run(vec![1; 17]).await.unwrap_err();
    let message = failed.error.to_string();
    assert!(
        message.contains("map(worker).len() <= 16"),
        "unexpected error: {message}"
    );
    let records = lines(&failed.transcript);
    let last = records.last().cloned().unwrap_or_default();
    assert!(
        last.starts_with("judge -> dispatch turn_failed: ") && last.contains("at most 16 items"),
        "{records:?}"
    );
    // No worker ever started.
    assert!(!records.iter().any(|r| r.contains("-> worker")));
}

/// A panel of three whose judge goes on once two have answered.
#[workflow(entry = chair, output = Vec<String>)]
pub mod vote {
    use super::*;

    /// How long each panelist takes, in ms (`0` fails at once).
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
    pub struct Delays {
        pub a: u64,
        pub b: u64,
        pub c: u64,
    }

    #[handoff]
    pub struct Ask {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Panel>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
        pub delay_ms: u64,
    }

    #[handoff]
    pub struct AskB {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::PanelB>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
        pub delay_ms: u64,
    }

    #[handoff]
    pub struct AskC {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::PanelC>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
        pub delay_ms: u64,
    }

    #[agent(owns = [Chair], to = [parallel(a, b, c)])]
    async fn chair(d: Delays, cx: chair::Context<'_>) -> Result<chair::Next, Reject> {
        Ok(chair::Next::Parallel(chair::Parallel {
            a: Ask {
                op: Operation::new("vote", "a"),
                scope: cx.lease(authority::Panel).until_hop(cx.hop() + 4),
                evidence: vec![],
                open: vec![],
                stop: StopWhen::at_hop(cx.hop() + 5),
                delay_ms: d.a,
            },
            b: AskB {
                op: Operation::new("vote", "b"),
                scope: cx.lease(authority::PanelB).until_hop(cx.hop() + 4),
                evidence: vec![],
                open: vec![],
                stop: StopWhen::at_hop(cx.hop() + 5),
                delay_ms: d.b,
            },
            c: AskC {
                op: Operation::new("vote", "c"),
                scope: cx.lease(authority::PanelC).until_hop(cx.hop() + 4),
                evidence: vec![],
                open: vec![],
                stop: StopWhen::at_hop(cx.hop() + 5),
                delay_ms: d.c,
            },
        }))
    }

    async fn answer(who: &str, delay_ms: u64) -> Result<String, Reject> {
        if delay_ms == 0 {
            return Err(Reject::because(format!("{who} cannot say")));
        }
        tokio::time::sleep(Duration::from_millis(delay_ms)).await;
        Ok(format!("{who} says yes"))
    }

    #[agent(owns = [Panel], to = [judge])]
    async fn a(ask: Ask, _cx: a::Context<'_>) -> Result<a::Next, Reject> {
        answer("a", ask.delay_ms).await.map(a::Next::Judge)
    }

    #[agent(owns = [PanelB], to = [judge])]
    async fn b(ask: AskB, _cx: b::Context<'_>) -> Result<b::Next, Reject> {
        answer("b", ask.delay_ms).await.map(b::Next::Judge)
    }

    #[agent(owns = [PanelC], to = [judge])]
    async fn c(ask: AskC, _cx: c::Context<'_>) -> Result<c::Next, Reject> {
        answer("c", ask.delay_ms).await.map(c::Next::Judge)
    }

    #[agent(owns = [Judge], join = [a: String, b: String, c: String], quorum = 2, to = [END])]
    async fn judge(views: judge::Joined, _cx: judge::Context<'_>) -> Result<judge::Next, Reject> {
        Ok(judge::Next::End(
            [views.a, views.b, views.c]
                .iter()
                .map(|v| match v {
                    Branch::Done(said) => said.clone(),
                    other => other.to_string(),
                })
                .collect(),
        ))
    }
}

const CANCELLED: &str = "cancelled: the join's quorum of 2 done branches was reached first";

#[tokio::test(start_paused = true)]
async fn a_quorum_join_cancels_the_branches_still_running_and_records_them() {
    let wf = vote::Workflow::new((), ());
    let started = tokio::time::Instant::now();
    let delays = vote::Delays {
        a: 5,
        b: 1000,
        c: 10,
    };
    let done = wf.run(delays).await.unwrap();
    // `b` would take a second: the join went on once `a` and `c` were done.
    assert_eq!(started.elapsed(), Duration::from_millis(10));
    assert_eq!(done.output, ["a says yes", CANCELLED, "c says yes"]);
    let records = lines(&done.transcript);
    assert_eq!(
        records,
        [
            "START -> chair accepted".to_owned(),
            "chair -> a accepted".to_owned(),
            "chair -> b accepted".to_owned(),
            "chair -> c accepted".to_owned(),
            "a -> judge accepted".to_owned(),
            // The cancelled branch's input again, its turn cut (as a failed
            // turn is recorded), in branch order.
            format!("chair -> b turn_failed: {CANCELLED}"),
            "c -> judge accepted".to_owned(),
            "chair -> judge accepted".to_owned(),
            "judge -> END accepted".to_owned(),
        ]
    );
    assert_eq!(
        done.transcript.lineage(5),
        Some(&Lineage::Outcome {
            fork: 0,
            branch: 1,
            parent: 2
        })
    );
}

#[tokio::test(start_paused = true)]
async fn a_failed_branch_does_not_count_toward_the_quorum() {
    let wf = vote::Workflow::new((), ());
    let started = tokio::time::Instant::now();
    // `a` fails at once: the join waits for `b` and `c`.
    let delays = vote::Delays { a: 0, b: 30, c: 20 };
    let done = wf.run(delays).await.unwrap();
    assert_eq!(started.elapsed(), Duration::from_millis(30));
    assert_eq!(
        done.output,
        [
            "failed: agent `a` failed: a cannot say",
            "b says yes",
            "c says yes"
        ]
    );
}

/// A map whose join goes on once two items are done.
#[workflow(entry = dispatch, output = Vec<String>)]
pub mod first_two {
    use super::*;

    #[handoff]
    pub struct Job {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Work>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
        pub delay_ms: u64,
    }

    #[agent(owns = [Dispatch], to = [map(worker, max = 8)])]
    async fn dispatch(
        delays: Vec<u64>,
        cx: dispatch::Context<'_>,
    ) -> Result<dispatch::Next, Reject> {
        let jobs = delays.into_iter().map(|delay_ms| Job {
            op: Operation::new("work", ""),
            scope: cx.lease(authority::Work).until_hop(cx.hop() + 9),
            evidence: vec![],
            open: vec![],
            stop: StopWhen::at_hop(cx.hop() + 10),
            delay_ms,
        });
        Ok(dispatch::Next::Map(jobs.collect()))
    }

    #[agent(owns = [Work], to = [gather])]
    async fn worker(job: Job, _cx: worker::Context<'_>) -> Result<worker::Next, Reject> {
        tokio::time::sleep(Duration::from_millis(job.delay_ms)).await;
        Ok(worker::Next::Gather(job.delay_ms))
    }

    #[agent(owns = [Gather], join = [worker: [u64]], quorum = 2, to = [END])]
    async fn gather(all: gather::Joined, _cx: gather::Context<'_>) -> Result<gather::Next, Reject> {
        Ok(gather::Next::End(
            all.worker
                .iter()
                .map(|b| match b {
                    Branch::Done(ms) => format!("{ms} ms"),
                    Branch::Cancelled { .. } => "cancelled".to_owned(),
                    other => other.to_string(),
                })
                .collect(),
        ))
    }
}

#[tokio::test(start_paused = true)]
async fn a_map_under_a_quorum_keeps_list_order_and_cancels_the_slow_items() {
    let wf = first_two::Workflow::new((), ());
    let started = tokio::time::Instant::now();
    let done = wf.run(vec![300, 20, 400, 10]).await.unwrap();
    assert_eq!(started.elapsed(), Duration::from_millis(20));
    assert_eq!(done.output, ["cancelled", "20 ms", "cancelled", "10 ms"]);
}

#[test]
fn the_manifest_and_the_diagram_show_the_forks_and_joins() {
    let manifest = serde_json::to_value(mixed::Workflow::manifest()).unwrap();
    assert_eq!(
        manifest["forks"],
        serde_json::json!([
            {
                "from": "lead",
                "kind": "parallel",
                "branches": ["left", "right"],
                "join": "judge",
                "join_input_schema": "mixed.judge.Joined.schema.json",
                "policy": "all"
            },
            {
                "from": "dispatch",
                "kind": "map",
                "branches": ["worker"],
                "max_items": 16,
                "join": "gather",
                "join_input_schema": "mixed.gather.Joined.schema.json",
                "policy": "all"
            }
        ])
    );
    let manifest = serde_json::to_value(vote::Workflow::manifest()).unwrap();
    assert_eq!(
        manifest["forks"][0]["policy"],
        serde_json::json!({"quorum": 2})
    );
    // The map's bound is the fan-out agent's post-condition, published.
    let dispatch = &mixed::Workflow::manifest().agents[4];
    assert_eq!(
        dispatch.post,
        [
            "map(worker).len() <= 16: one turn maps at most 16 items to `worker` (`map(worker, max = 16)`, counted in MAX_HOPS); the list is never cut"
        ]
    );
    let diagram = mixed::Workflow::mermaid();
    for line in [
        "    fork_1{{\"map max 16\"}}",
        "    join_1{{\"join all\"}}",
        "    agent_dispatch --> fork_1",
        "    fork_1 -->|\"Job\"| agent_worker",
        "    agent_worker -->|\"Done\"| join_1",
        "    join_1 -->|\"gather::Joined\"| agent_gather",
        "    fork_0 -->|\"HalfAsk\"| agent_left",
        "    agent_right -->|\"Part\"| join_0",
        "    join_0 -->|\"judge::Joined\"| agent_judge",
    ] {
        assert!(
            diagram.lines().any(|l| l == line),
            "no `{line}` in\n{diagram}"
        );
    }
    // No edge of a fan-out is drawn as a plain handoff.
    assert!(!diagram.contains("agent_dispatch -->|"), "{diagram}");
    assert!(vote::Workflow::mermaid().contains("    join_0{{\"join quorum 2\"}}\n"));
    // Each join's input has a schema of its own, every outcome in it.
    let schemas = mixed::Workflow::schemas();
    assert!(schemas.conflicts().is_empty(), "{:?}", schemas.conflicts());
    let gather = serde_json::to_string(schemas.get("mixed.gather.Joined").unwrap()).unwrap();
    let judge = serde_json::to_string(schemas.get("mixed.judge.Joined").unwrap()).unwrap();
    assert!(
        gather.contains("\"worker\"") && gather.contains("\"array\""),
        "{gather}"
    );
    assert!(
        gather.contains("cancelled") && gather.contains("Done"),
        "{gather}"
    );
    assert!(
        judge.contains("\"left\"") && judge.contains("Part"),
        "{judge}"
    );
}

/// Resumed from every cut, a quorum join ends as the run did: a branch
/// whose value is read back counts toward the quorum, so a branch the
/// quorum cut is cut again, not run to its end.
#[tokio::test(start_paused = true)]
async fn a_quorum_join_resumed_from_every_cut_counts_the_branches_read_back() {
    use std::sync::Arc;
    use workflow_core::ledger::{Ledger, MemoryLedger};
    let ledger = Arc::new(MemoryLedger::new());
    let delays = vote::Delays {
        a: 5,
        b: 1000,
        c: 10,
    };
    let done = vote::Workflow::new((), ())
        .with_ledger(ledger.clone())
        .run(delays.clone())
        .await
        .unwrap();
    assert_eq!(done.output, ["a says yes", CANCELLED, "c says yes"]);
    let run_id = done.transcript.run_id();
    let whole = ledger.records(run_id).unwrap();
    for cut in 1..whole.len() {
        let crashed = Arc::new(MemoryLedger::new());
        for r in whole.iter().take(cut) {
            crashed.append(r).unwrap();
        }
        let started = tokio::time::Instant::now();
        let resumed = vote::Workflow::new((), ())
            .with_ledger(crashed.clone())
            .resume(run_id)
            .await
            .unwrap_or_else(|e| panic!("cut after {cut} records: {}", e.error));
        assert_eq!(resumed.output, done.output, "cut after {cut} records");
        // `b` is never waited for: at most `c`'s 10 ms again.
        assert!(
            started.elapsed() <= Duration::from_millis(10),
            "cut after {cut} records: {:?}",
            started.elapsed()
        );
        let again = crashed.records(run_id).unwrap();
        assert_eq!(
            crate::parallel_rounds::lines(&again),
            crate::parallel_rounds::lines(&whole),
            "cut after {cut} records"
        );
        crashed.verify_run(run_id).unwrap();
    }
}
