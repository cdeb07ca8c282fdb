//! A fan-out inside a branch: the review branch fans out again to a
//! security and a performance reviewer, whose join (the panel) hands the
//! branch's outcome to the outer join, while the style branch takes one
//! turn. The nested fan-out's records follow the outer round's, the run
//! resumes from every cut and replays identically.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use workflow_core::Executor;
use workflow_core::ledger::{Ledger, LedgerRecord, MemoryLedger};
use workflow_core::prelude::*;

use crate::parallel_rounds::lines;

/// The security reviewer's tool calls made live (a replay or a resume
/// serves recorded ones instead).
pub struct Calls {
    made: AtomicU32,
}

/// What a reviewer hands on: whether it approves is its verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema, Verdict)]
pub struct Review {
    #[verdict]
    pub approve: bool,
    pub note: String,
}

#[workflow(entry = lead, output = Vec<String>, deps = Calls)]
pub mod nested {
    use super::*;

    #[handoff]
    pub struct ReviewAsk {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Review>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
        pub change: String,
    }

    #[handoff]
    pub struct SecurityAsk {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Security>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
        pub change: String,
    }

    #[handoff]
    pub struct PerformanceAsk {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Performance>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
        pub change: String,
    }

    #[handoff]
    pub struct StyleAsk {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Style>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
        pub change: String,
    }

    #[handoff]
    pub struct SummaryAsk {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Summary>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
        pub review: Review,
    }

    /// Scans a change for `unsafe` (waits 10 ms, as a real tool would).
    #[tool(effect = read)]
    async fn scan(change: String, calls: &Calls) -> Result<u32, ToolError> {
        calls.made.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(10)).await;
        Ok(change.matches("unsafe").count() as u32)
    }

    #[agent(owns = [Lead], to = [parallel(review, style)])]
    async fn lead(change: String, cx: lead::Context<'_>) -> Result<lead::Next, Reject> {
        Ok(lead::Next::Parallel(lead::Parallel {
            review: ReviewAsk {
                op: Operation::new("review", "review"),
                scope: cx.lease(authority::Review).until_hop(cx.hop() + 7),
                evidence: vec![],
                open: vec![],
                stop: StopWhen::at_hop(cx.hop() + 7),
                change: change.clone(),
            },
            style: StyleAsk {
                op: Operation::new("review", "style"),
                scope: cx.lease(authority::Style).until_hop(cx.hop() + 7),
                evidence: vec![],
                open: vec![],
                stop: StopWhen::at_hop(cx.hop() + 7),
                change,
            },
        }))
    }

    /// Asks two specialists at once.
    #[agent(owns = [Review], to = [parallel(security, performance)])]
    async fn review(ask: ReviewAsk, cx: review::Context<'_>) -> Result<review::Next, Reject> {
        if ask.change.contains("panic") {
            return Err(Reject::because("cannot review a panic"));
        }
        Ok(review::Next::Parallel(review::Parallel {
            security: SecurityAsk {
                op: Operation::new("review", "security"),
                scope: cx.lease(authority::Security).as_long_as_mine(),
                evidence: vec![],
                open: vec![],
                stop: StopWhen::at_hop(cx.hop() + 7),
                change: ask.change.clone(),
            },
            performance: PerformanceAsk {
                op: Operation::new("review", "performance"),
                scope: cx.lease(authority::Performance).as_long_as_mine(),
                evidence: vec![],
                open: vec![],
                stop: StopWhen::at_hop(cx.hop() + 7),
                change: ask.change,
            },
        }))
    }

    #[agent(owns = [Security], tools = [scan], to = [panel])]
    async fn security(
        ask: SecurityAsk,
        cx: security::Context<'_>,
    ) -> Result<security::Next, Reject> {
        let found = cx.call(tools::scan, ask.change).await?;
        Ok(security::Next::Panel(Review {
            approve: found == 0,
            note: format!("{found} unsafe"),
        }))
    }

    #[agent(owns = [Performance], to = [panel])]
    async fn performance(
        ask: PerformanceAsk,
        _cx: performance::Context<'_>,
    ) -> Result<performance::Next, Reject> {
        tokio::time::sleep(Duration::from_millis(20)).await;
        if ask.change.contains("slow") {
            return Err(Reject::because("cannot measure a slow change"));
        }
        Ok(performance::Next::Panel(Review {
            approve: true,
            note: "fast".into(),
        }))
    }

    /// The nested join: both specialists' views, handed to the summary.
    /// When they disagree it carries the disagreement forward as an open
    /// question, unless the change asks it to drop it (`merge`).
    #[agent(owns = [Panel], join = [security: Review, performance: Review], to = [summarize])]
    async fn panel(views: panel::Joined, cx: panel::Context<'_>) -> Result<panel::Next, Reject> {
        let notes: Vec<String> = [
            ("security", &views.security),
            ("performance", &views.performance),
        ]
        .into_iter()
        .map(|(name, view)| match view {
            Branch::Done(r) => format!("{name} {}", r.note),
            other => format!("{name} {other}"),
        })
        .collect();
        let approve = [&views.security, &views.performance]
            .iter()
            .all(|v| matches!(v, Branch::Done(r) if r.approve));
        let merge = notes.iter().any(|n| n.contains("2 unsafe"));
        let open = match cx.disagreement() {
            Some(dissent) if !merge => vec![dissent.uncertainty("a person decides")],
            _ => vec![],
        };
        Ok(panel::Next::Summarize(SummaryAsk {
            op: Operation::new("summarize", "review"),
            scope: cx.lease(authority::Summary).as_long_as_mine(),
            evidence: vec![],
            open,
            stop: StopWhen::at_hop(cx.hop() + 7),
            review: Review {
                approve,
                note: notes.join("; "),
            },
        }))
    }

    /// Hands the panel's review on as the review branch's outcome.
    #[agent(owns = [Summary], to = [judge])]
    async fn summarize(
        ask: SummaryAsk,
        _cx: summarize::Context<'_>,
    ) -> Result<summarize::Next, Reject> {
        Ok(summarize::Next::Judge(ask.review))
    }

    #[agent(owns = [Style], to = [judge])]
    async fn style(ask: StyleAsk, _cx: style::Context<'_>) -> Result<style::Next, Reject> {
        tokio::time::sleep(Duration::from_millis(25)).await;
        Ok(style::Next::Judge(Review {
            approve: ask.change.len() < 40,
            note: "tidy".into(),
        }))
    }

    #[agent(owns = [Judge], join = [review: Review, style: Review], to = [END])]
    async fn judge(views: judge::Joined, _cx: judge::Context<'_>) -> Result<judge::Next, Reject> {
        let seen = [("review", &views.review), ("style", &views.style)]
            .into_iter()
            .map(|(name, view)| match view {
                Branch::Done(r) => format!("{name}: approve={} ({})", r.approve, r.note),
                other => format!("{name}: {other}"),
            })
            .collect();
        Ok(judge::Next::End(seen))
    }
}

fn executor() -> nested::Workflow {
    nested::Workflow::new(
        (),
        Calls {
            made: AtomicU32::new(0),
        },
    )
}

#[test]
fn max_hops_counts_the_nested_fan_outs_turns() {
    // lead; review, security, performance, panel, summarize; style; judge.
    assert_eq!(nested::MAX_HOPS, 8);
}

#[tokio::test(start_paused = true)]
async fn a_branch_fans_out_again_and_its_join_hands_on_the_branchs_outcome() {
    let ledger = Arc::new(MemoryLedger::new());
    let wf = executor().with_ledger(ledger.clone());
    let started = tokio::time::Instant::now();
    let done = wf.run("unsafe code".to_owned()).await.unwrap();
    assert_eq!(
        done.output,
        [
            "review: approve=false (security 1 unsafe; performance fast)",
            "style: approve=true (tidy)"
        ]
    );
    // The outer round takes 25 ms (style); then the nested fan-out, its
    // branches at once, 20 ms (performance; security's scan 10 ms); the
    // panel's and the summary's turns take no time.
    assert_eq!(started.elapsed(), Duration::from_millis(45));
    let records = ledger.records(done.transcript.run_id()).unwrap();
    assert_eq!(
        lines(&records),
        [
            "#0 START -> lead accepted",
            "#1 lead -> review accepted (branch 0 of #0)",
            "#2 lead -> style accepted (branch 1 of #0)",
            "#3 review -> security accepted (branch 0 of #1)",
            "#4 style -> judge accepted (outcome of branch 1 of #0 (after #2))",
            "#5 review -> performance accepted (branch 1 of #1)",
            "#6 security -> panel accepted (outcome of branch 0 of #1 (after #3))",
            "#7 performance -> panel accepted (outcome of branch 1 of #1 (after #5))",
            "#8 review -> panel accepted (join of #1 (#6, #7))",
            "#9 panel -> summarize accepted (step of branch 0 of #0 (after #8))",
            "#10 summarize -> judge accepted (outcome of branch 0 of #0 (after #9))",
            "#11 lead -> judge accepted (join of #0 (#10, #4))",
            "#12 judge -> END accepted",
        ]
    );
    // The scan is recorded with the security turn's outcome.
    let calls: Vec<u32> = records
        .iter()
        .filter(|r| r.turn.as_ref().is_some_and(|t| !t.tool_calls.is_empty()))
        .map(|r| r.seq)
        .collect();
    assert_eq!(calls, [6]);
    ledger.verify_run(done.transcript.run_id()).unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_failed_nested_branch_is_seen_by_the_nested_join() {
    let done = executor().run("slow code".to_owned()).await.unwrap();
    assert_eq!(
        done.output,
        [
            "review: approve=false (security 0 unsafe; performance failed: agent `performance` failed: cannot measure a slow change)",
            "style: approve=true (tidy)"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_failed_turn_that_would_fan_out_is_the_outer_branchs_failure() {
    let done = executor().run("panic".to_owned()).await.unwrap();
    assert_eq!(
        done.output,
        [
            "review: failed: agent `review` failed: cannot review a panic",
            "style: approve=true (tidy)"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_nested_fan_out_resumes_from_every_cut_and_replays_identically() {
    let ledger = Arc::new(MemoryLedger::new());
    let wf = executor().with_ledger(ledger.clone());
    let done = wf.run("unsafe code".to_owned()).await.unwrap();
    let run_id = done.transcript.run_id();
    let whole = ledger.records(run_id).unwrap();
    assert_eq!(whole.len(), 13);
    let view = |r: &LedgerRecord| {
        (
            r.seq,
            r.from.to_string(),
            r.to.to_string(),
            r.receipt.clone(),
            r.lineage.clone(),
            r.payload.clone(),
            r.turn.as_ref().map(|t| {
                t.tool_calls
                    .iter()
                    .map(|c| (c.tool.clone(), c.arguments.clone(), c.outcome.clone()))
                    .collect::<Vec<_>>()
            }),
        )
    };
    for cut in 1..whole.len() {
        let crashed = Arc::new(MemoryLedger::new());
        for r in whole.iter().take(cut) {
            crashed.append(r).unwrap();
        }
        for seq in 0..=cut as u32 {
            for entry in ledger.tool_calls(run_id, seq).unwrap() {
                crashed.append_tool_call(run_id, seq, &entry).unwrap();
            }
        }
        crashed
            .verify_run(run_id)
            .unwrap_or_else(|e| panic!("cut after {cut} records: {e}"));
        let wf: Executor<nested::Spec> = executor().with_ledger(crashed.clone());
        let resumed = wf
            .resume(run_id)
            .await
            .unwrap_or_else(|e| panic!("cut after {cut} records: {}", e.error));
        assert_eq!(resumed.output, done.output, "cut after {cut} records");
        let again = crashed.records(run_id).unwrap();
        assert_eq!(
            again.iter().map(view).collect::<Vec<_>>(),
            whole.iter().map(view).collect::<Vec<_>>(),
            "cut after {cut} records"
        );
        crashed.verify_run(run_id).unwrap();
        // The security turn (its outcome #6) calls the tool only when it
        // started after the cut: recorded, or cut with its call journaled,
        // it is served its call.
        let live = u32::from(cut < 6);
        assert_eq!(
            wf.deps().made.load(Ordering::SeqCst),
            live,
            "cut after {cut} records"
        );
    }
    let replaying = executor();
    let report = replaying.replay(&whole).await.unwrap();
    assert!(report.is_identical(), "{report}");
    assert_eq!(replaying.deps().made.load(Ordering::SeqCst), 0);
}

#[test]
fn the_diagram_draws_the_nested_fork_inside_the_branch() {
    let diagram = nested::Workflow::mermaid();
    for line in [
        "    fork_0 -->|\"ReviewAsk\"| agent_review",
        "    agent_review --> fork_1",
        "    fork_1 -->|\"SecurityAsk\"| agent_security",
        "    agent_security -->|\"Review\"| join_1",
        "    join_1 -->|\"panel::Joined\"| agent_panel",
        "    agent_panel -->|\"SummaryAsk\"| agent_summarize",
        "    agent_summarize -->|\"Review\"| join_0",
    ] {
        assert!(
            diagram.lines().any(|l| l == line),
            "no `{line}` in\n{diagram}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_nested_join_carries_its_branches_disagreement_forward() {
    let ledger = Arc::new(MemoryLedger::new());
    let wf = executor().with_ledger(ledger.clone());
    let done = wf.run("unsafe code".to_owned()).await.unwrap();
    let records = ledger.records(done.transcript.run_id()).unwrap();
    // The panel's handoff to the summary carries the disagreement between
    // security (blocks: an `unsafe`) and performance (approves).
    let step: serde_json::Value =
        serde_json::from_str(&records[9].payload_json().unwrap()).unwrap();
    assert_eq!(
        step["open"][0]["question"],
        "the branches disagree: security says \"false\", performance says \"true\""
    );
    assert_eq!(records[9].receipt, Receipt::Accepted);
}

#[tokio::test(start_paused = true)]
async fn a_nested_join_that_drops_its_branches_disagreement_is_rejected() {
    let ledger = Arc::new(MemoryLedger::new());
    let wf = executor().with_ledger(ledger.clone());
    // Two `unsafe`: the panel merges the views and drops the dissent.
    let done = wf.run("unsafe unsafe code".to_owned()).await.unwrap();
    assert_eq!(
        done.output[0],
        "review: rejected: the branches of fan-out #1 disagree (security: \"false\", performance: \"true\") and the join dropped it (carry it forward as an open question naming every branch and its verdict, or resolve it with evidence citing every branch's outcome record)"
    );
    let records = ledger.records(done.transcript.run_id()).unwrap();
    assert!(
        matches!(
            &records[9].receipt,
            Receipt::Rejected {
                reason: RejectReason::VerdictDropped { fork: 1, .. }
            }
        ),
        "{:?}",
        records[9].receipt
    );
}
