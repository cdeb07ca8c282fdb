//! Branches of more than one turn: a branch hands on inside itself (the
//! security reviewer to a fixer and back, a bounded loop) while the other
//! branch takes one turn; the branches run in rounds, their records in a
//! fixed order, and the run resumes from every cut and replays identically.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use workflow_core::Executor;
use workflow_core::ledger::{Ledger, LedgerRecord, MemoryLedger};
use workflow_core::prelude::*;

/// The fixer's tool calls made live (a replay or a resume serves recorded
/// ones instead).
pub struct Calls {
    made: AtomicU32,
}

/// What a reviewer hands the judge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Review {
    pub approve: bool,
    /// How many fix rounds the change went through.
    pub fixes: u32,
}

#[workflow(entry = lead, output = Vec<String>, deps = Calls)]
pub mod rounds {
    use super::*;

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
        pub fixes: u32,
    }

    #[handoff]
    pub struct FixAsk {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Fix>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
        pub change: String,
        pub fixes: u32,
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

    /// Rewrites the first `unsafe` of a change (waits 10 ms, as a real
    /// tool would).
    #[tool(effect = read)]
    async fn rewrite(change: String, calls: &Calls) -> Result<String, ToolError> {
        calls.made.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(10)).await;
        Ok(change.replacen("unsafe", "safe", 1))
    }

    #[agent(owns = [Lead], to = [parallel(security, style)])]
    async fn lead(change: String, cx: lead::Context<'_>) -> Result<lead::Next, Reject> {
        Ok(lead::Next::Parallel(lead::Parallel {
            security: SecurityAsk {
                op: Operation::new("review", "security"),
                scope: cx.lease(authority::Security).until_hop(cx.hop() + 7),
                evidence: vec![],
                open: vec![],
                stop: StopWhen::at_hop(cx.hop() + 7),
                change: change.clone(),
                fixes: 0,
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

    /// Sends the change to the fixer while it has an `unsafe`, then hands
    /// its review to the judge.
    #[agent(owns = [Security], to = [fixer, judge])]
    async fn security(
        ask: SecurityAsk,
        cx: security::Context<'_>,
    ) -> Result<security::Next, Reject> {
        if ask.change.contains("panic") {
            return Err(Reject::because("cannot review a panic"));
        }
        if ask.change.contains("unsafe") {
            return Ok(security::Next::Fixer(FixAsk {
                op: Operation::new("fix", "unsafe"),
                scope: cx.lease(authority::Fix).as_long_as_mine(),
                evidence: vec![],
                open: vec![],
                stop: StopWhen::at_hop(cx.hop() + 7),
                change: ask.change,
                fixes: ask.fixes,
            }));
        }
        Ok(security::Next::Judge(Review {
            approve: true,
            fixes: ask.fixes,
        }))
    }

    #[agent(owns = [Fix], tools = [rewrite], to = [security(max = 2)])]
    async fn fixer(ask: FixAsk, cx: fixer::Context<'_>) -> Result<fixer::Next, Reject> {
        let change = cx.call(tools::rewrite, ask.change).await?;
        Ok(fixer::Next::Security(SecurityAsk {
            op: Operation::new("review", "security"),
            scope: cx.lease(authority::Security).as_long_as_mine(),
            evidence: vec![],
            open: vec![],
            stop: StopWhen::at_hop(cx.hop() + 7),
            change,
            fixes: ask.fixes + 1,
        }))
    }

    #[agent(owns = [Style], to = [judge])]
    async fn style(ask: StyleAsk, _cx: style::Context<'_>) -> Result<style::Next, Reject> {
        tokio::time::sleep(Duration::from_millis(25)).await;
        Ok(style::Next::Judge(Review {
            approve: ask.change.len() < 40,
            fixes: 0,
        }))
    }

    #[agent(owns = [Judge], join = [security: Review, style: Review], to = [END])]
    async fn judge(views: judge::Joined, _cx: judge::Context<'_>) -> Result<judge::Next, Reject> {
        let seen = [("security", &views.security), ("style", &views.style)]
            .into_iter()
            .map(|(name, view)| match view {
                Branch::Done(r) => format!("{name}: approve={} fixes={}", r.approve, r.fixes),
                other => format!("{name}: {other}"),
            })
            .collect();
        Ok(judge::Next::End(seen))
    }
}

fn executor() -> rounds::Workflow {
    rounds::Workflow::new(
        (),
        Calls {
            made: AtomicU32::new(0),
        },
    )
}

/// The run's records as `from -> to receipt (lineage)`.
/// What a record says that a resumed run must write again exactly: its
/// place, receipt, lineage, payload, and each tool call's arguments and
/// outcome (not how long a call took).
#[allow(clippy::type_complexity)]
pub fn record_view(
    r: &LedgerRecord,
) -> (
    u32,
    String,
    String,
    workflow_core::Receipt,
    Option<workflow_core::Lineage>,
    String,
    Option<
        Vec<(
            std::borrow::Cow<'static, str>,
            String,
            workflow_core::tool::ToolOutcome,
        )>,
    >,
) {
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
                .collect()
        }),
    )
}

pub fn lines(records: &[LedgerRecord]) -> Vec<String> {
    records
        .iter()
        .map(|r| {
            let receipt = match &r.receipt {
                Receipt::Accepted => "accepted".to_owned(),
                Receipt::Rejected { reason } => format!("rejected: {reason}"),
                Receipt::TurnFailed { error } => format!("turn_failed: {error}"),
                other => format!("{other:?}"),
            };
            match &r.lineage {
                Some(l) => format!("#{} {} -> {} {receipt} ({l})", r.seq, r.from, r.to),
                None => format!("#{} {} -> {} {receipt}", r.seq, r.from, r.to),
            }
        })
        .collect()
}

#[test]
fn max_hops_counts_every_turn_of_a_branch_loop() {
    // lead; security, fixer, security, fixer, security, fixer (the loop's
    // bound of 2 refuses its third handoff back, and the join still
    // follows); style; judge.
    assert_eq!(rounds::MAX_HOPS, 1 + 6 + 1 + 1);
}

#[tokio::test(start_paused = true)]
async fn a_branch_loops_through_its_fixer_while_the_other_branch_waits_at_the_join() {
    let ledger = Arc::new(MemoryLedger::new());
    let wf = executor().with_ledger(ledger.clone());
    let started = tokio::time::Instant::now();
    let done = wf.run("unsafe unsafe code".to_owned()).await.unwrap();
    assert_eq!(
        done.output,
        [
            "security: approve=true fixes=2",
            "style: approve=true fixes=0"
        ]
    );
    // Round 1 (security, style at once) takes 25 ms (style's sleep), the
    // fixer's two rounds 10 ms each; the security turns take no time.
    assert_eq!(started.elapsed(), Duration::from_millis(45));
    let records = ledger.records(done.transcript.run_id()).unwrap();
    assert_eq!(
        lines(&records),
        [
            "#0 START -> lead accepted",
            "#1 lead -> security accepted (branch 0 of #0)",
            "#2 lead -> style accepted (branch 1 of #0)",
            "#3 security -> fixer accepted (step of branch 0 of #0 (after #1))",
            "#4 style -> judge accepted (outcome of branch 1 of #0 (after #2))",
            "#5 fixer -> security accepted (step of branch 0 of #0 (after #3))",
            "#6 security -> fixer accepted (step of branch 0 of #0 (after #5))",
            "#7 fixer -> security accepted (step of branch 0 of #0 (after #6))",
            "#8 security -> judge accepted (outcome of branch 0 of #0 (after #7))",
            "#9 lead -> judge accepted (join of #0 (#8, #4))",
            "#10 judge -> END accepted",
        ]
    );
    // Each fixer turn's tool call is recorded with the step it handed on.
    let calls: Vec<u32> = records
        .iter()
        .filter(|r| r.turn.as_ref().is_some_and(|t| !t.tool_calls.is_empty()))
        .map(|r| r.seq)
        .collect();
    assert_eq!(calls, [5, 7]);
    ledger.verify_run(done.transcript.run_id()).unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_loop_inside_a_branch_past_its_bound_is_the_branchs_rejection() {
    let done = executor()
        .run("unsafe unsafe unsafe".to_owned())
        .await
        .unwrap();
    // The third fixer -> security handoff is over the loop's bound of 2:
    // refused at its receipt, the security branch's outcome.
    assert_eq!(
        done.output,
        [
            "security: rejected: loop bound of 2 used up",
            "style: approve=true fixes=0"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_failed_turn_inside_a_branch_is_the_branchs_failure() {
    let done = executor().run("unsafe panic".to_owned()).await.unwrap();
    // security hands to the fixer (an `unsafe`), which hands back; the
    // second security turn fails (a `panic`): the branch failed.
    assert_eq!(
        done.output,
        [
            "security: failed: agent `security` failed: cannot review a panic",
            "style: approve=true fixes=0"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_multi_turn_fan_out_resumes_from_every_cut_and_replays_identically() {
    let ledger = Arc::new(MemoryLedger::new());
    let wf = executor().with_ledger(ledger.clone());
    let done = wf.run("unsafe unsafe code".to_owned()).await.unwrap();
    let run_id = done.transcript.run_id();
    let whole = ledger.records(run_id).unwrap();
    assert_eq!(whole.len(), 11);
    let view = record_view;
    for cut in 1..whole.len() {
        let crashed = Arc::new(MemoryLedger::new());
        for r in whole.iter().take(cut) {
            crashed.append(r).unwrap();
        }
        // The cut turn's journaled calls go with the records.
        for seq in 0..=cut as u32 {
            for entry in ledger.tool_calls(run_id, seq).unwrap() {
                crashed.append_tool_call(run_id, seq, &entry).unwrap();
            }
        }
        let wf: Executor<rounds::Spec> = executor().with_ledger(crashed.clone());
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
        // The fixer turns (their records #5 and #7) call the tool only when
        // they started after the cut: a turn recorded, or cut with its
        // call journaled, is served its call.
        let live = [5, 7].into_iter().filter(|&seq| seq > cut).count() as u32;
        assert_eq!(
            wf.deps().made.load(Ordering::SeqCst),
            live,
            "cut after {cut} records"
        );
    }
    // A replay serves every fixer call from the record and agrees.
    let replaying = executor();
    let report = replaying.replay(&whole).await.unwrap();
    assert!(report.is_identical(), "{report}");
    assert_eq!(replaying.deps().made.load(Ordering::SeqCst), 0);
}

#[test]
fn the_diagram_draws_a_branchs_own_handoffs_between_its_fork_and_its_join() {
    let diagram = rounds::Workflow::mermaid();
    for line in [
        "    fork_0 -->|\"SecurityAsk\"| agent_security",
        "    agent_security -->|\"FixAsk\"| agent_fixer",
        "    agent_fixer -->|\"SecurityAsk max 2\"| agent_security",
        "    agent_security -->|\"Review\"| join_0",
        "    agent_style -->|\"Review\"| join_0",
        "    join_0 -->|\"judge::Joined\"| agent_judge",
    ] {
        assert!(
            diagram.lines().any(|l| l == line),
            "no `{line}` in\n{diagram}"
        );
    }
}
