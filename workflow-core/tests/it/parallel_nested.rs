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

use crate::parallel_rounds::{lines, record_view};

/// The security reviewer's tool calls made live (a replay or a resume
/// serves recorded ones instead).
pub struct Calls {
    made: AtomicU32,
}

thread_local! {
    /// The review agent fails (a run resumed after a crash whose agent does
    /// not repeat itself; the paused-clock tests run on one thread).
    static FAIL_REVIEW: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
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
        if ask.change.contains("panic") || FAIL_REVIEW.get() {
            return Err(Reject::because("cannot review a panic"));
        }
        // A `lease` in the change: a lease past the reviewer's own, refused
        // at the security reviewer's receipt.
        let scope = if ask.change.contains("lease") {
            cx.lease(authority::Security).until_hop(cx.hop() + 50)
        } else {
            cx.lease(authority::Security).as_long_as_mine()
        };
        Ok(review::Next::Parallel(review::Parallel {
            security: SecurityAsk {
                op: Operation::new("review", "security"),
                scope,
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

/// Run `run_id`'s ledger as a crash after its first `cut` records left
/// it: those records, and the tool calls journaled up to the cut.
fn crashed_at(
    ledger: &MemoryLedger,
    whole: &[LedgerRecord],
    run_id: u64,
    cut: usize,
) -> Arc<MemoryLedger> {
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
}

/// Cuts run `run_id` (its records `whole`) after each record and resumes
/// it with `resume` on the cut ledger: each resumed run ends with `output`,
/// writes the records the run wrote, and verifies.
async fn resumes_like_the_run<O, F, R>(
    ledger: &MemoryLedger,
    whole: &[LedgerRecord],
    run_id: u64,
    output: &O,
    resume: F,
) where
    O: PartialEq + std::fmt::Debug,
    F: Fn(Arc<MemoryLedger>) -> R,
    R: std::future::Future<Output = Result<workflow_core::Completed<O>, workflow_core::Aborted>>,
{
    for cut in 1..whole.len() {
        let crashed = crashed_at(ledger, whole, run_id, cut);
        let resumed = resume(crashed.clone())
            .await
            .unwrap_or_else(|e| panic!("cut after {cut} records: {}", e.error));
        assert_eq!(&resumed.output, output, "cut after {cut} records");
        let again = crashed.records(run_id).unwrap();
        assert_eq!(lines(&again), lines(whole), "cut after {cut} records");
        crashed.verify_run(run_id).unwrap();
    }
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

/// Runs `change`, then cuts the run after each of its records and resumes
/// it: the records (payloads and tool calls included) are the uncut run's,
/// the scan is called only by a security turn that started after the cut
/// (its outcome is record `scanned`), and a replay is identical.
async fn resumes_from_every_cut(change: &str, scanned: Option<usize>) {
    let ledger = Arc::new(MemoryLedger::new());
    let wf = executor().with_ledger(ledger.clone());
    let done = wf.run(change.to_owned()).await.unwrap();
    let run_id = done.transcript.run_id();
    let whole = ledger.records(run_id).unwrap();
    let view = record_view;
    for cut in 1..whole.len() {
        let crashed = crashed_at(&ledger, &whole, run_id, cut);
        crashed
            .verify_run(run_id)
            .unwrap_or_else(|e| panic!("{change}: cut after {cut} records: {e}"));
        let wf: Executor<nested::Spec> = executor().with_ledger(crashed.clone());
        let resumed = wf
            .resume(run_id)
            .await
            .unwrap_or_else(|e| panic!("{change}: cut after {cut} records: {}", e.error));
        assert_eq!(
            resumed.output, done.output,
            "{change}: cut after {cut} records"
        );
        let again = crashed.records(run_id).unwrap();
        assert_eq!(
            again.iter().map(view).collect::<Vec<_>>(),
            whole.iter().map(view).collect::<Vec<_>>(),
            "{change}: cut after {cut} records"
        );
        crashed.verify_run(run_id).unwrap();
        let live = u32::from(scanned.is_some_and(|s| cut < s));
        assert_eq!(
            wf.deps().made.load(Ordering::SeqCst),
            live,
            "{change}: cut after {cut} records"
        );
    }
    let replaying = executor();
    let report = replaying.replay(&whole).await.unwrap();
    assert!(report.is_identical(), "{change}: {report}");
    assert_eq!(replaying.deps().made.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn a_nested_fan_out_resumes_from_every_cut_and_replays_identically() {
    resumes_from_every_cut("unsafe code", Some(6)).await;
}

#[tokio::test(start_paused = true)]
async fn failed_refused_and_rejected_turns_resume_from_every_cut() {
    // A nested branch whose turn fails (performance, `slow`).
    resumes_from_every_cut("slow code", Some(6)).await;
    // The turn that was to fan out fails.
    resumes_from_every_cut("panic", None).await;
    // A nested start refused at its receipt (security, `lease`): the
    // nested join follows without its outcome.
    resumes_from_every_cut("lease code", None).await;
    // The nested join's step refused (the disagreement dropped).
    resumes_from_every_cut("unsafe unsafe code", Some(6)).await;
}

#[tokio::test(start_paused = true)]
async fn a_fanning_turn_that_does_not_repeat_itself_after_a_crash_is_refused() {
    let ledger = Arc::new(MemoryLedger::new());
    let done = executor()
        .with_ledger(ledger.clone())
        .run("unsafe code".to_owned())
        .await
        .unwrap();
    let run_id = done.transcript.run_id();
    let whole = ledger.records(run_id).unwrap();
    // Cut after the nested fan-out's first start (#3): its other start is
    // lost, so the review turn runs again, and now fails.
    let crashed = Arc::new(MemoryLedger::new());
    for r in whole.iter().take(4) {
        crashed.append(r).unwrap();
    }
    let wf = executor().with_ledger(crashed.clone());
    FAIL_REVIEW.set(true);
    let error = wf.resume(run_id).await.unwrap_err().error;
    FAIL_REVIEW.set(false);
    assert!(
        error
            .to_string()
            .contains("fanned out before the crash and, run again, failed"),
        "{error}"
    );
    // Nothing was written: the run is as the crash left it.
    assert_eq!(crashed.records(run_id).unwrap().len(), 4);
    crashed.verify_run(run_id).unwrap();
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

/// A contract for a look under `scope`, with `open` left open.
fn contract<A: workflow_core::Authority>(
    scope: Scope<A>,
    hop: u32,
    open: Vec<Uncertainty>,
) -> Contract<A> {
    Contract::builder(
        Operation::new("look", "again"),
        scope,
        StopWhen::at_hop(hop + 6),
    )
    .evidence([])
    .open(open)
    .build()
}

/// A join whose agent fans out again: the disagreement it received must be
/// carried by each start, as by any handoff.
#[workflow(entry = lead, output = Vec<String>)]
pub mod refan {
    use super::*;

    #[handoff]
    pub struct ALook {
        #[contract]
        pub contract: Contract<authority::A>,
        pub approve: bool,
        /// Whether the join is to carry the disagreement forward.
        pub carry: bool,
    }

    #[handoff]
    pub struct BLook {
        #[contract]
        pub contract: Contract<authority::B>,
        pub approve: bool,
    }

    #[handoff]
    pub struct CLook {
        #[contract]
        pub contract: Contract<authority::C>,
    }

    #[handoff]
    pub struct DLook {
        #[contract]
        pub contract: Contract<authority::D>,
    }

    #[agent(to = [parallel(a, b)])]
    async fn lead(carry: bool, cx: lead::Context<'_>) -> Result<lead::Next, Reject> {
        // `a` blocks, `b` approves: the join receives a disagreement.
        let until = cx.hop() + 6;
        Ok(lead::Next::Parallel(lead::Parallel {
            a: ALook {
                contract: contract(cx.lease(authority::A).until_hop(until), cx.hop(), vec![]),
                approve: false,
                carry,
            },
            b: BLook {
                contract: contract(cx.lease(authority::B).until_hop(until), cx.hop(), vec![]),
                approve: true,
            },
        }))
    }

    #[agent(owns = [A], to = [j])]
    async fn a(ask: ALook, _cx: a::Context<'_>) -> Result<a::Next, Reject> {
        Ok(a::Next::J(Review {
            approve: ask.approve,
            note: ask.carry.to_string(),
        }))
    }

    #[agent(owns = [B], to = [j])]
    async fn b(ask: BLook, _cx: b::Context<'_>) -> Result<b::Next, Reject> {
        Ok(b::Next::J(Review {
            approve: ask.approve,
            note: String::new(),
        }))
    }

    /// Fans out again, carrying the disagreement when the branches were
    /// asked to.
    #[agent(join = [a: Review, b: Review], to = [parallel(c, d)])]
    async fn j(views: j::Joined, cx: j::Context<'_>) -> Result<j::Next, Reject> {
        let carry = matches!(&views.a, Branch::Done(r) if r.note == "true");
        let open = match cx.disagreement() {
            Some(dissent) if carry => vec![dissent.uncertainty("a person decides")],
            _ => vec![],
        };
        let until = cx.hop() + 4;
        Ok(j::Next::Parallel(j::Parallel {
            c: CLook {
                contract: contract(
                    cx.lease(authority::C).until_hop(until),
                    cx.hop(),
                    open.clone(),
                ),
            },
            d: DLook {
                contract: contract(cx.lease(authority::D).until_hop(until), cx.hop(), open),
            },
        }))
    }

    #[agent(owns = [C], to = [k])]
    async fn c(_ask: CLook, _cx: c::Context<'_>) -> Result<c::Next, Reject> {
        Ok(c::Next::K(true))
    }

    #[agent(owns = [D], to = [k])]
    async fn d(_ask: DLook, _cx: d::Context<'_>) -> Result<d::Next, Reject> {
        Ok(d::Next::K(true))
    }

    #[agent(join = [c: bool, d: bool], to = [END])]
    async fn k(views: k::Joined, _cx: k::Context<'_>) -> Result<k::Next, Reject> {
        Ok(k::Next::End(vec![views.c.to_string(), views.d.to_string()]))
    }
}

#[tokio::test]
async fn a_join_that_fans_out_carries_its_disagreement_to_every_start() {
    let dropped = refan::Workflow::new((), ()).run(false).await.unwrap();
    let why = "rejected: the branches of fan-out #0 disagree";
    assert!(
        dropped.output.iter().all(|o| o.starts_with(why)),
        "{:?}",
        dropped.output
    );
    let carried = refan::Workflow::new((), ()).run(true).await.unwrap();
    assert!(
        carried.output.iter().all(|o| !o.starts_with("rejected")),
        "{:?}",
        carried.output
    );
}

/// A contract for a deeper look under `scope`.
fn deep_contract<A: workflow_core::Authority>(scope: Scope<A>, hop: u32) -> Contract<A> {
    Contract::builder(
        Operation::new("look", "deeper"),
        scope,
        StopWhen::at_hop(hop + 9),
    )
    .evidence([])
    .open([])
    .build()
}

/// Fan-outs two levels deep: `a`'s branch fans out to `b` and `c`, and
/// `b`'s branch fans out again to `d` and `e`.
#[workflow(entry = lead, output = Vec<String>, deps = Calls)]
pub mod deep {
    use super::*;

    #[handoff]
    pub struct ALook {
        #[contract]
        pub contract: Contract<authority::A>,
    }

    #[handoff]
    pub struct SLook {
        #[contract]
        pub contract: Contract<authority::S>,
    }

    #[handoff]
    pub struct BLook {
        #[contract]
        pub contract: Contract<authority::B>,
    }

    #[handoff]
    pub struct CLook {
        #[contract]
        pub contract: Contract<authority::C>,
    }

    #[handoff]
    pub struct DLook {
        #[contract]
        pub contract: Contract<authority::D>,
    }

    #[handoff]
    pub struct ELook {
        #[contract]
        pub contract: Contract<authority::E>,
    }

    /// Counts (waits 5 ms, as a real tool would).
    #[tool(effect = read)]
    async fn count(n: u32, calls: &Calls) -> Result<u32, ToolError> {
        calls.made.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(5)).await;
        Ok(n + 1)
    }

    #[agent(to = [parallel(a, s)])]
    async fn lead(_go: bool, cx: lead::Context<'_>) -> Result<lead::Next, Reject> {
        let until = cx.hop() + 9;
        Ok(lead::Next::Parallel(lead::Parallel {
            a: ALook {
                contract: deep_contract(cx.lease(authority::A).until_hop(until), cx.hop()),
            },
            s: SLook {
                contract: deep_contract(cx.lease(authority::S).until_hop(until), cx.hop()),
            },
        }))
    }

    #[agent(owns = [A], to = [parallel(b, c)])]
    async fn a(_ask: ALook, cx: a::Context<'_>) -> Result<a::Next, Reject> {
        Ok(a::Next::Parallel(a::Parallel {
            b: BLook {
                contract: deep_contract(cx.lease(authority::B).as_long_as_mine(), cx.hop()),
            },
            c: CLook {
                contract: deep_contract(cx.lease(authority::C).as_long_as_mine(), cx.hop()),
            },
        }))
    }

    #[agent(owns = [B], to = [parallel(d, e)])]
    async fn b(_ask: BLook, cx: b::Context<'_>) -> Result<b::Next, Reject> {
        Ok(b::Next::Parallel(b::Parallel {
            d: DLook {
                contract: deep_contract(cx.lease(authority::D).as_long_as_mine(), cx.hop()),
            },
            e: ELook {
                contract: deep_contract(cx.lease(authority::E).as_long_as_mine(), cx.hop()),
            },
        }))
    }

    #[agent(owns = [D], to = [jde])]
    async fn d(_ask: DLook, _cx: d::Context<'_>) -> Result<d::Next, Reject> {
        tokio::time::sleep(Duration::from_millis(3)).await;
        Ok(d::Next::Jde("d".into()))
    }

    #[agent(owns = [E], tools = [count], to = [jde])]
    async fn e(_ask: ELook, cx: e::Context<'_>) -> Result<e::Next, Reject> {
        let n = cx.call(tools::count, 1).await?;
        Ok(e::Next::Jde(format!("e{n}")))
    }

    #[agent(owns = [Jde], join = [d: String, e: String], to = [jbc])]
    async fn jde(views: jde::Joined, _cx: jde::Context<'_>) -> Result<jde::Next, Reject> {
        Ok(jde::Next::Jbc(format!(
            "({} {})",
            shown(&views.d),
            shown(&views.e)
        )))
    }

    #[agent(owns = [C], to = [jbc])]
    async fn c(_ask: CLook, _cx: c::Context<'_>) -> Result<c::Next, Reject> {
        tokio::time::sleep(Duration::from_millis(7)).await;
        Ok(c::Next::Jbc("c".into()))
    }

    #[agent(owns = [Jbc], join = [b: String, c: String], to = [jtop])]
    async fn jbc(views: jbc::Joined, _cx: jbc::Context<'_>) -> Result<jbc::Next, Reject> {
        Ok(jbc::Next::Jtop(format!(
            "({} {})",
            shown(&views.b),
            shown(&views.c)
        )))
    }

    #[agent(owns = [S], to = [jtop])]
    async fn s(_ask: SLook, _cx: s::Context<'_>) -> Result<s::Next, Reject> {
        tokio::time::sleep(Duration::from_millis(11)).await;
        Ok(s::Next::Jtop("s".into()))
    }

    #[agent(owns = [Jtop], join = [a: String, s: String], to = [END])]
    async fn jtop(views: jtop::Joined, _cx: jtop::Context<'_>) -> Result<jtop::Next, Reject> {
        Ok(jtop::Next::End(vec![shown(&views.a), shown(&views.s)]))
    }
}

/// A branch's value, or how it ended without one.
fn shown(outcome: &Branch<String>) -> String {
    match outcome {
        Branch::Done(v) => v.clone(),
        other => other.to_string(),
    }
}

fn deep_executor() -> deep::Workflow {
    deep::Workflow::new(
        (),
        Calls {
            made: AtomicU32::new(0),
        },
    )
}

#[test]
fn max_hops_counts_fan_outs_two_levels_deep() {
    // lead; a, b, d, e, jde, c, jbc; s; jtop.
    assert_eq!(deep::MAX_HOPS, 10);
}

#[tokio::test(start_paused = true)]
async fn fan_outs_two_levels_deep_run_resume_from_every_cut_and_replay() {
    let ledger = Arc::new(MemoryLedger::new());
    let done = deep_executor()
        .with_ledger(ledger.clone())
        .run(true)
        .await
        .unwrap();
    assert_eq!(done.output, ["((d e2) c)", "s"]);
    let run_id = done.transcript.run_id();
    let whole = ledger.records(run_id).unwrap();
    ledger.verify_run(run_id).unwrap();
    let joins: Vec<String> = lines(&whole)
        .into_iter()
        .filter(|l| l.contains("(join of"))
        .collect();
    assert_eq!(joins.len(), 3, "{:#?}", lines(&whole));
    let scanned = whole
        .iter()
        .position(|r| r.turn.as_ref().is_some_and(|t| !t.tool_calls.is_empty()))
        .expect("the count is recorded");
    for cut in 1..whole.len() {
        let crashed = crashed_at(&ledger, &whole, run_id, cut);
        let wf = deep_executor().with_ledger(crashed.clone());
        let resumed = wf
            .resume(run_id)
            .await
            .unwrap_or_else(|e| panic!("cut after {cut} records: {}", e.error));
        assert_eq!(resumed.output, done.output, "cut after {cut} records");
        let again = crashed.records(run_id).unwrap();
        assert_eq!(lines(&again), lines(&whole), "cut after {cut} records");
        assert_eq!(
            again.iter().map(|r| &r.payload).collect::<Vec<_>>(),
            whole.iter().map(|r| &r.payload).collect::<Vec<_>>(),
            "cut after {cut} records"
        );
        crashed.verify_run(run_id).unwrap();
        assert_eq!(
            wf.deps().made.load(Ordering::SeqCst),
            u32::from(cut < scanned),
            "cut after {cut} records"
        );
    }
    let replaying = deep_executor();
    let report = replaying.replay(&whole).await.unwrap();
    assert!(report.is_identical(), "{report}");
    assert_eq!(replaying.deps().made.load(Ordering::SeqCst), 0);
}

/// A map inside a branch: the sweep branch hands each file to its own
/// worker turn, and the workers' join (the gather) hands the branch's
/// outcome to the outer join.
#[workflow(entry = lead, output = Vec<String>, deps = Calls)]
pub mod mapped {
    use super::*;

    #[handoff]
    pub struct SweepLook {
        #[contract]
        pub contract: Contract<authority::Sweep>,
        pub files: Vec<String>,
    }

    #[handoff]
    pub struct StyleLook {
        #[contract]
        pub contract: Contract<authority::Style>,
    }

    #[handoff]
    pub struct Job {
        #[contract]
        pub contract: Contract<authority::Work>,
        pub file: String,
    }

    /// Measures a file (waits as many milliseconds as its name is long).
    #[tool(effect = read)]
    async fn measure(file: String, calls: &Calls) -> Result<u32, ToolError> {
        calls.made.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(file.len() as u64)).await;
        Ok(file.len() as u32)
    }

    #[agent(to = [parallel(sweep, style)])]
    async fn lead(files: Vec<String>, cx: lead::Context<'_>) -> Result<lead::Next, Reject> {
        let until = cx.hop() + 9;
        Ok(lead::Next::Parallel(lead::Parallel {
            sweep: SweepLook {
                contract: deep_contract(cx.lease(authority::Sweep).until_hop(until), cx.hop()),
                files,
            },
            style: StyleLook {
                contract: deep_contract(cx.lease(authority::Style).until_hop(until), cx.hop()),
            },
        }))
    }

    #[agent(owns = [Sweep], to = [map(worker, max = 4)])]
    async fn sweep(ask: SweepLook, cx: sweep::Context<'_>) -> Result<sweep::Next, Reject> {
        let jobs = ask.files.into_iter().map(|file| Job {
            contract: deep_contract(cx.lease(authority::Work).as_long_as_mine(), cx.hop()),
            file,
        });
        Ok(sweep::Next::Map(jobs.collect()))
    }

    #[agent(owns = [Work], tools = [measure], to = [gather])]
    async fn worker(job: Job, cx: worker::Context<'_>) -> Result<worker::Next, Reject> {
        let n = cx.call(tools::measure, job.file.clone()).await?;
        Ok(worker::Next::Gather(format!("{}={n}", job.file)))
    }

    #[agent(owns = [Gather], join = [worker: [String]], to = [judge])]
    async fn gather(all: gather::Joined, _cx: gather::Context<'_>) -> Result<gather::Next, Reject> {
        let seen: Vec<String> = all.worker.iter().map(shown).collect();
        Ok(gather::Next::Judge(format!("[{}]", seen.join(" "))))
    }

    #[agent(owns = [Style], to = [judge])]
    async fn style(_ask: StyleLook, _cx: style::Context<'_>) -> Result<style::Next, Reject> {
        tokio::time::sleep(Duration::from_millis(2)).await;
        Ok(style::Next::Judge("tidy".into()))
    }

    #[agent(owns = [Judge], join = [sweep: String, style: String], to = [END])]
    async fn judge(views: judge::Joined, _cx: judge::Context<'_>) -> Result<judge::Next, Reject> {
        Ok(judge::Next::End(vec![
            shown(&views.sweep),
            shown(&views.style),
        ]))
    }
}

fn mapped_executor() -> mapped::Workflow {
    mapped::Workflow::new(
        (),
        Calls {
            made: AtomicU32::new(0),
        },
    )
}

/// Runs `files` through the mapped workflow, then cuts the run after each
/// of its records and resumes it: the records are the uncut run's, each
/// file measured once (live only by a worker turn that started after the
/// cut), and a replay is identical.
async fn mapped_resumes_from_every_cut(files: &[&str], output: [&str; 2]) {
    let ledger = Arc::new(MemoryLedger::new());
    let wf = mapped_executor().with_ledger(ledger.clone());
    let done = wf
        .run(files.iter().map(|f| f.to_string()).collect())
        .await
        .unwrap();
    assert_eq!(done.output, output);
    assert_eq!(wf.deps().made.load(Ordering::SeqCst), files.len() as u32);
    let run_id = done.transcript.run_id();
    let whole = ledger.records(run_id).unwrap();
    ledger.verify_run(run_id).unwrap();
    let measured: Vec<usize> = whole
        .iter()
        .filter(|r| r.turn.as_ref().is_some_and(|t| !t.tool_calls.is_empty()))
        .map(|r| r.seq as usize)
        .collect();
    assert_eq!(measured.len(), files.len(), "{:#?}", lines(&whole));
    // The map's join, inside the sweep branch, cites each item's outcome
    // in the list's order (none for an empty list: the mapping turn's one
    // record).
    let join: Vec<String> = lines(&whole)
        .into_iter()
        .filter(|l| l.contains("sweep -> gather accepted (join of #1 ("))
        .collect();
    assert_eq!(join.len(), 1, "{:#?}", lines(&whole));
    for cut in 1..whole.len() {
        let crashed = crashed_at(&ledger, &whole, run_id, cut);
        let wf = mapped_executor().with_ledger(crashed.clone());
        let resumed = wf
            .resume(run_id)
            .await
            .unwrap_or_else(|e| panic!("{files:?}: cut after {cut} records: {}", e.error));
        assert_eq!(resumed.output, done.output, "{files:?}: cut after {cut}");
        let again = crashed.records(run_id).unwrap();
        assert_eq!(lines(&again), lines(&whole), "{files:?}: cut after {cut}");
        assert_eq!(
            again.iter().map(|r| &r.payload).collect::<Vec<_>>(),
            whole.iter().map(|r| &r.payload).collect::<Vec<_>>(),
            "{files:?}: cut after {cut}"
        );
        crashed.verify_run(run_id).unwrap();
        // A worker whose record is written, or whose call is journaled
        // (its turn cut after the call), is served its call.
        assert!(
            wf.deps().made.load(Ordering::SeqCst)
                <= measured.iter().filter(|&&s| s >= cut).count() as u32,
            "{files:?}: cut after {cut}"
        );
    }
    let replaying = mapped_executor();
    let report = replaying.replay(&whole).await.unwrap();
    assert!(report.is_identical(), "{report}");
    assert_eq!(replaying.deps().made.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn a_map_inside_a_branch_joins_its_items_in_order_and_resumes_from_every_cut() {
    mapped_resumes_from_every_cut(&["abcd", "ab", "abc"], ["[abcd=4 ab=2 abc=3]", "tidy"]).await;
}

#[tokio::test(start_paused = true)]
async fn a_map_inside_a_branch_handed_no_item_joins_at_once_and_resumes_from_every_cut() {
    mapped_resumes_from_every_cut(&[], ["[]", "tidy"]).await;
}

#[test]
fn max_hops_counts_every_item_of_a_map_inside_a_branch() {
    // lead; sweep, four workers, gather; style; judge.
    assert_eq!(mapped::MAX_HOPS, 9);
}

/// A quorum at a nested join: the first of two specialists to answer is
/// enough, the other is cancelled.
#[workflow(entry = lead, output = Vec<String>)]
pub mod quorate {
    use super::*;

    #[handoff]
    pub struct AskLook {
        #[contract]
        pub contract: Contract<authority::Ask>,
    }

    #[handoff]
    pub struct OtherLook {
        #[contract]
        pub contract: Contract<authority::Other>,
    }

    #[handoff]
    pub struct FastLook {
        #[contract]
        pub contract: Contract<authority::Fast>,
    }

    #[handoff]
    pub struct SlowLook {
        #[contract]
        pub contract: Contract<authority::Slow>,
    }

    #[agent(to = [parallel(ask, other)])]
    async fn lead(_go: bool, cx: lead::Context<'_>) -> Result<lead::Next, Reject> {
        let until = cx.hop() + 7;
        Ok(lead::Next::Parallel(lead::Parallel {
            ask: AskLook {
                contract: deep_contract(cx.lease(authority::Ask).until_hop(until), cx.hop()),
            },
            other: OtherLook {
                contract: deep_contract(cx.lease(authority::Other).until_hop(until), cx.hop()),
            },
        }))
    }

    #[agent(owns = [Ask], to = [parallel(fast, slow)])]
    async fn ask(_ask: AskLook, cx: ask::Context<'_>) -> Result<ask::Next, Reject> {
        Ok(ask::Next::Parallel(ask::Parallel {
            fast: FastLook {
                contract: deep_contract(cx.lease(authority::Fast).as_long_as_mine(), cx.hop()),
            },
            slow: SlowLook {
                contract: deep_contract(cx.lease(authority::Slow).as_long_as_mine(), cx.hop()),
            },
        }))
    }

    #[agent(owns = [Fast], to = [first])]
    async fn fast(_ask: FastLook, _cx: fast::Context<'_>) -> Result<fast::Next, Reject> {
        tokio::time::sleep(Duration::from_millis(5)).await;
        Ok(fast::Next::First("fast".into()))
    }

    #[agent(owns = [Slow], to = [first])]
    async fn slow(_ask: SlowLook, _cx: slow::Context<'_>) -> Result<slow::Next, Reject> {
        tokio::time::sleep(Duration::from_millis(50)).await;
        Ok(slow::Next::First("slow".into()))
    }

    #[agent(owns = [First], join = [fast: String, slow: String], quorum = 1, to = [judge])]
    async fn first(views: first::Joined, _cx: first::Context<'_>) -> Result<first::Next, Reject> {
        Ok(first::Next::Judge(format!(
            "{} / {}",
            shown(&views.fast),
            shown(&views.slow)
        )))
    }

    #[agent(owns = [Other], to = [judge])]
    async fn other(_ask: OtherLook, _cx: other::Context<'_>) -> Result<other::Next, Reject> {
        Ok(other::Next::Judge("other".into()))
    }

    #[agent(owns = [Judge], join = [ask: String, other: String], to = [END])]
    async fn judge(views: judge::Joined, _cx: judge::Context<'_>) -> Result<judge::Next, Reject> {
        Ok(judge::Next::End(vec![
            shown(&views.ask),
            shown(&views.other),
        ]))
    }
}

#[tokio::test(start_paused = true)]
async fn a_quorum_at_a_nested_join_cancels_the_rest_and_resumes_from_every_cut() {
    let ledger = Arc::new(MemoryLedger::new());
    let started = tokio::time::Instant::now();
    let done = quorate::Workflow::new((), ())
        .with_ledger(ledger.clone())
        .run(true)
        .await
        .unwrap();
    assert_eq!(
        done.output,
        [
            "fast / cancelled: the join's quorum of 1 done branches was reached first",
            "other"
        ]
    );
    // The slow branch was dropped when the fast one answered.
    assert_eq!(started.elapsed(), Duration::from_millis(5));
    let run_id = done.transcript.run_id();
    let whole = ledger.records(run_id).unwrap();
    ledger.verify_run(run_id).unwrap();
    resumes_like_the_run(
        &ledger,
        &whole,
        run_id,
        &done.output,
        |crashed| async move {
            quorate::Workflow::new((), ())
                .with_ledger(crashed)
                .resume(run_id)
                .await
        },
    )
    .await;
    let report = quorate::Workflow::new((), ()).replay(&whole).await.unwrap();
    assert!(report.is_identical(), "{report}");
}

/// A map inside a branch whose join goes on once two items are done.
#[workflow(entry = lead, output = Vec<String>)]
pub mod first_two_inside {
    use super::*;

    #[handoff]
    pub struct SweepLook {
        #[contract]
        pub contract: Contract<authority::Sweep>,
        pub waits: Vec<u64>,
    }

    #[handoff]
    pub struct StyleLook {
        #[contract]
        pub contract: Contract<authority::Style>,
    }

    #[handoff]
    pub struct Job {
        #[contract]
        pub contract: Contract<authority::Work>,
        pub wait: u64,
    }

    #[agent(to = [parallel(sweep, style)])]
    async fn lead(waits: Vec<u64>, cx: lead::Context<'_>) -> Result<lead::Next, Reject> {
        let until = cx.hop() + 9;
        Ok(lead::Next::Parallel(lead::Parallel {
            sweep: SweepLook {
                contract: deep_contract(cx.lease(authority::Sweep).until_hop(until), cx.hop()),
                waits,
            },
            style: StyleLook {
                contract: deep_contract(cx.lease(authority::Style).until_hop(until), cx.hop()),
            },
        }))
    }

    #[agent(owns = [Sweep], to = [map(worker, max = 4)])]
    async fn sweep(ask: SweepLook, cx: sweep::Context<'_>) -> Result<sweep::Next, Reject> {
        let jobs = ask.waits.into_iter().map(|wait| Job {
            contract: deep_contract(cx.lease(authority::Work).as_long_as_mine(), cx.hop()),
            wait,
        });
        Ok(sweep::Next::Map(jobs.collect()))
    }

    #[agent(owns = [Work], to = [gather])]
    async fn worker(job: Job, _cx: worker::Context<'_>) -> Result<worker::Next, Reject> {
        tokio::time::sleep(Duration::from_millis(job.wait)).await;
        Ok(worker::Next::Gather(format!("{}ms", job.wait)))
    }

    #[agent(owns = [Gather], join = [worker: [String]], quorum = 2, to = [judge])]
    async fn gather(all: gather::Joined, _cx: gather::Context<'_>) -> Result<gather::Next, Reject> {
        let seen: Vec<String> = all.worker.iter().map(shown).collect();
        Ok(gather::Next::Judge(seen.join(" | ")))
    }

    #[agent(owns = [Style], to = [judge])]
    async fn style(_ask: StyleLook, _cx: style::Context<'_>) -> Result<style::Next, Reject> {
        Ok(style::Next::Judge("tidy".into()))
    }

    #[agent(owns = [Judge], join = [sweep: String, style: String], to = [END])]
    async fn judge(views: judge::Joined, _cx: judge::Context<'_>) -> Result<judge::Next, Reject> {
        Ok(judge::Next::End(vec![
            shown(&views.sweep),
            shown(&views.style),
        ]))
    }
}

#[tokio::test(start_paused = true)]
async fn a_map_inside_a_branch_under_a_quorum_keeps_list_order_and_resumes_from_every_cut() {
    let ledger = Arc::new(MemoryLedger::new());
    let started = tokio::time::Instant::now();
    let done = first_two_inside::Workflow::new((), ())
        .with_ledger(ledger.clone())
        .run(vec![300, 20, 10, 500])
        .await
        .unwrap();
    const CUT: &str = "cancelled: the join's quorum of 2 done branches was reached first";
    assert_eq!(
        done.output,
        [format!("{CUT} | 20ms | 10ms | {CUT}"), "tidy".to_owned()]
    );
    // The two slow items were dropped once the two fast ones answered.
    assert_eq!(started.elapsed(), Duration::from_millis(20));
    let run_id = done.transcript.run_id();
    let whole = ledger.records(run_id).unwrap();
    ledger.verify_run(run_id).unwrap();
    resumes_like_the_run(
        &ledger,
        &whole,
        run_id,
        &done.output,
        |crashed| async move {
            first_two_inside::Workflow::new((), ())
                .with_ledger(crashed)
                .resume(run_id)
                .await
        },
    )
    .await;
    let report = first_two_inside::Workflow::new((), ())
        .replay(&whole)
        .await
        .unwrap();
    assert!(report.is_identical(), "{report}");
}

/// Cuts run `run_id` (its records `whole`) after each record and resumes
/// it with `resume`: each resumed run ends with `output` and writes the
/// records the run wrote, payloads and tool calls included, each tool call
/// made live only by a turn whose record is at or after the cut.
async fn resumes_record_for_record<O, F, R>(
    ledger: &MemoryLedger,
    whole: &[LedgerRecord],
    run_id: u64,
    output: &O,
    resume: F,
) where
    O: PartialEq + std::fmt::Debug,
    F: Fn(Arc<MemoryLedger>) -> R,
    R: std::future::Future<
            Output = (
                Result<workflow_core::Completed<O>, workflow_core::Aborted>,
                u32,
            ),
        >,
{
    let view = record_view;
    for cut in 1..whole.len() {
        let crashed = crashed_at(ledger, whole, run_id, cut);
        let (resumed, made) = resume(crashed.clone()).await;
        let resumed = resumed.unwrap_or_else(|e| panic!("cut after {cut} records: {}", e.error));
        assert_eq!(&resumed.output, output, "cut after {cut} records");
        let again = crashed.records(run_id).unwrap();
        assert_eq!(lines(&again), lines(whole), "cut after {cut} records");
        for (a, w) in again.iter().zip(whole) {
            assert_eq!(view(a), view(w), "cut after {cut} records");
        }
        crashed.verify_run(run_id).unwrap();
        let live: usize = whole
            .iter()
            .filter(|r| r.seq as usize >= cut)
            .filter_map(|r| r.turn.as_ref())
            .map(|t| t.tool_calls.len())
            .sum();
        assert!(
            made as usize <= live,
            "cut after {cut} records: {made} calls made, {live} at most"
        );
    }
}

/// A map inside a branch under a quorum of 2, whose items end in every way
/// a branch can: `ok:N` answers after N ms, `err:N` fails after N ms,
/// `post:N` answers after N ms with a value its post-condition refuses,
/// `lease` is refused at its receipt (a lease past the sweep's own), and
/// a body still running at 100 ms times out. Each item measures its job
/// first (a tool call journaled with its turn).
#[workflow(entry = lead, output = Vec<String>, deps = Calls)]
pub mod picky {
    use super::*;

    #[handoff]
    pub struct SweepLook {
        #[contract]
        pub contract: Contract<authority::Sweep>,
        pub jobs: Vec<String>,
    }

    #[handoff]
    pub struct StyleLook {
        #[contract]
        pub contract: Contract<authority::Style>,
    }

    #[handoff]
    pub struct Job {
        #[contract]
        pub contract: Contract<authority::Work>,
        pub job: String,
    }

    /// Measures a job; a `tool:..` job cannot be measured.
    #[tool(effect = read)]
    async fn measure(job: String, calls: &Calls) -> Result<u32, ToolError> {
        calls.made.fetch_add(1, Ordering::SeqCst);
        if job.starts_with("tool") {
            return Err(ToolError::status("measure", 404, "no such job"));
        }
        Ok(job.len() as u32)
    }

    #[agent(to = [parallel(sweep, style)])]
    async fn lead(jobs: Vec<String>, cx: lead::Context<'_>) -> Result<lead::Next, Reject> {
        let until = cx.hop() + 9;
        Ok(lead::Next::Parallel(lead::Parallel {
            sweep: SweepLook {
                contract: deep_contract(cx.lease(authority::Sweep).until_hop(until), cx.hop()),
                jobs,
            },
            style: StyleLook {
                contract: deep_contract(cx.lease(authority::Style).until_hop(until), cx.hop()),
            },
        }))
    }

    #[agent(owns = [Sweep], to = [map(worker, max = 4)])]
    async fn sweep(ask: SweepLook, cx: sweep::Context<'_>) -> Result<sweep::Next, Reject> {
        let jobs = ask.jobs.into_iter().map(|job| {
            let scope = if job == "lease" {
                cx.lease(authority::Work).until_hop(cx.hop() + 50)
            } else {
                cx.lease(authority::Work).as_long_as_mine()
            };
            Job {
                contract: deep_contract(scope, cx.hop()),
                job,
            }
        });
        Ok(sweep::Next::Map(jobs.collect()))
    }

    #[agent(owns = [Work], tools = [measure], to = [gather], timeout_ms = 100)]
    #[post(!matches!(out, worker::Next::Gather(s) if s.starts_with("post")), "an item's answer is never `post`")]
    async fn worker(job: Job, cx: worker::Context<'_>) -> Result<worker::Next, Reject> {
        let measured = cx.call(tools::measure, job.job.clone()).await;
        let (kind, ms) = job.job.split_once(':').unwrap_or((&job.job, "0"));
        // A `tool:..` job goes on without its measure (and still fails:
        // its tool failed under the `abort` policy).
        if kind != "tool" {
            measured?;
        }
        tokio::time::sleep(Duration::from_millis(ms.parse().unwrap())).await;
        if kind == "err" {
            return Err(Reject::because("cannot do it"));
        }
        Ok(worker::Next::Gather(job.job.clone()))
    }

    #[agent(owns = [Gather], join = [worker: [String]], quorum = 2, to = [judge])]
    async fn gather(all: gather::Joined, _cx: gather::Context<'_>) -> Result<gather::Next, Reject> {
        let seen: Vec<String> = all.worker.iter().map(shown).collect();
        Ok(gather::Next::Judge(seen.join(" | ")))
    }

    #[agent(owns = [Style], to = [judge])]
    async fn style(_ask: StyleLook, _cx: style::Context<'_>) -> Result<style::Next, Reject> {
        Ok(style::Next::Judge("tidy".into()))
    }

    #[agent(owns = [Judge], join = [sweep: String, style: String], to = [END])]
    async fn judge(views: judge::Joined, _cx: judge::Context<'_>) -> Result<judge::Next, Reject> {
        Ok(judge::Next::End(vec![
            shown(&views.sweep),
            shown(&views.style),
        ]))
    }
}

fn picky_executor() -> picky::Workflow {
    picky::Workflow::new(
        (),
        Calls {
            made: AtomicU32::new(0),
        },
    )
}

/// Runs `jobs` through `picky`: its output is `output` after `ms` of the
/// paused clock, it resumes record for record from every cut, and a replay
/// is identical and calls no tool.
async fn picky_resumes_from_every_cut(jobs: &[&str], output: &str, ms: u64) {
    let ledger = Arc::new(MemoryLedger::new());
    let started = tokio::time::Instant::now();
    let done = picky_executor()
        .with_ledger(ledger.clone())
        .run(jobs.iter().map(|j| j.to_string()).collect())
        .await
        .unwrap();
    assert_eq!(done.output, [output, "tidy"], "{jobs:?}");
    assert_eq!(started.elapsed(), Duration::from_millis(ms), "{jobs:?}");
    let run_id = done.transcript.run_id();
    let whole = ledger.records(run_id).unwrap();
    ledger.verify_run(run_id).unwrap();
    resumes_record_for_record(
        &ledger,
        &whole,
        run_id,
        &done.output,
        |crashed| async move {
            let wf = picky_executor().with_ledger(crashed);
            let resumed = wf.resume(run_id).await;
            (resumed, wf.deps().made.load(Ordering::SeqCst))
        },
    )
    .await;
    let replaying = picky_executor();
    let report = replaying.replay(&whole).await.unwrap();
    assert!(report.is_identical(), "{jobs:?}: {report}");
    assert_eq!(replaying.deps().made.load(Ordering::SeqCst), 0);
}

const QUORUM_CUT: &str = "cancelled: the join's quorum of 2 done branches was reached first";

#[tokio::test(start_paused = true)]
async fn a_nested_quorum_reached_by_the_items_read_back_keeps_the_calls_the_cut_item_made() {
    // The third item measured its job before the quorum cut it: resumed
    // after the second item's record, the two read back reach the quorum
    // and the third is cut before it runs, its record holding the call
    // journaled for it as the first run's did.
    picky_resumes_from_every_cut(
        &["ok:1", "ok:10", "ok:1000"],
        &format!("ok:1 | ok:10 | {QUORUM_CUT}"),
        10,
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_nested_quorum_counts_a_value_its_post_condition_refuses_when_resumed_too() {
    // The first item's body returns at 1 ms (counted: the post-condition
    // is checked when its outcome is recorded), the second's at 10 ms: the
    // third is cut.
    picky_resumes_from_every_cut(
        &["post:1", "ok:10", "ok:1000"],
        &format!(
            "failed: agent `worker` broke post-condition `!matches!(out, worker::Next::Gather(s) if s.starts_with(\"post\"))`: an item's answer is never `post` | ok:10 | {QUORUM_CUT}"
        ),
        10,
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_nested_quorum_does_not_count_a_value_returned_after_a_tool_failed() {
    // The first item's body returns a value at 1 ms, but its tool failed
    // under `abort`: the branch fails, and is not counted, in the run as
    // when read back. The third item runs to its timeout; nothing is cut.
    picky_resumes_from_every_cut(
        &["tool:1", "ok:10", "ok:150"],
        "failed: agent `worker`: tool `measure` failed (status 404): no such job | ok:10 | timed out after 100 ms",
        100,
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_nested_quorum_does_not_count_refused_failed_or_timed_out_items() {
    // Refused at its receipt and failed: neither counts, the two others
    // both run to their end.
    picky_resumes_from_every_cut(
        &["lease", "err:1", "ok:20", "ok:10"],
        "rejected: the lease on authority `Work` (AtHop(51)) outlives the sender's bound (sender_scope: AtHop(9)) | failed: agent `worker` failed: cannot do it | ok:20 | ok:10",
        20,
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_nested_quorum_cuts_an_item_before_its_timeout_and_waits_for_timed_out_ones() {
    picky_resumes_from_every_cut(
        &["ok:500", "ok:5", "ok:50"],
        &format!("{QUORUM_CUT} | ok:5 | ok:50"),
        50,
    )
    .await;
    // Two time out: fewer than the quorum can answer, nothing is cut.
    picky_resumes_from_every_cut(
        &["ok:500", "ok:5", "ok:150"],
        "timed out after 100 ms | ok:5 | timed out after 100 ms",
        100,
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_nested_map_under_a_quorum_with_fewer_items_than_the_quorum_or_none() {
    picky_resumes_from_every_cut(&["ok:5"], "ok:5", 5).await;
    picky_resumes_from_every_cut(&[], "", 0).await;
}

#[tokio::test(start_paused = true)]
async fn a_nested_map_over_its_bound_fails_the_mapping_turn_and_resumes_from_every_cut() {
    picky_resumes_from_every_cut(
        &["ok:1", "ok:2", "ok:3", "ok:4", "ok:5"],
        "failed: agent `sweep` broke post-condition `map(worker).len() <= 4`: one turn maps at most 4 items to `worker` (`map(worker, max = 4)`, counted in MAX_HOPS); the list is never cut",
        0,
    )
    .await;
}

/// Two outer branches, each mapping inside itself: the left map waits for
/// every item, the right one for the first.
#[workflow(entry = lead, output = Vec<String>, deps = Calls)]
pub mod twin {
    use super::*;

    #[handoff]
    pub struct LeftLook {
        #[contract]
        pub contract: Contract<authority::Left>,
        pub waits: Vec<u64>,
    }

    #[handoff]
    pub struct RightLook {
        #[contract]
        pub contract: Contract<authority::Right>,
        pub waits: Vec<u64>,
    }

    #[handoff]
    pub struct LeftJob {
        #[contract]
        pub contract: Contract<authority::LeftWork>,
        pub wait: u64,
    }

    #[handoff]
    pub struct RightJob {
        #[contract]
        pub contract: Contract<authority::RightWork>,
        pub wait: u64,
    }

    #[tool(effect = read)]
    async fn measure(wait: u64, calls: &Calls) -> Result<u64, ToolError> {
        calls.made.fetch_add(1, Ordering::SeqCst);
        Ok(wait)
    }

    #[agent(to = [parallel(left, right)])]
    async fn lead(
        waits: (Vec<u64>, Vec<u64>),
        cx: lead::Context<'_>,
    ) -> Result<lead::Next, Reject> {
        let until = cx.hop() + 10;
        Ok(lead::Next::Parallel(lead::Parallel {
            left: LeftLook {
                contract: deep_contract(cx.lease(authority::Left).until_hop(until), cx.hop()),
                waits: waits.0,
            },
            right: RightLook {
                contract: deep_contract(cx.lease(authority::Right).until_hop(until), cx.hop()),
                waits: waits.1,
            },
        }))
    }

    #[agent(owns = [Left], to = [map(lw, max = 3)])]
    async fn left(ask: LeftLook, cx: left::Context<'_>) -> Result<left::Next, Reject> {
        let jobs = ask.waits.into_iter().map(|wait| LeftJob {
            contract: deep_contract(cx.lease(authority::LeftWork).as_long_as_mine(), cx.hop()),
            wait,
        });
        Ok(left::Next::Map(jobs.collect()))
    }

    #[agent(owns = [Right], to = [map(rw, max = 2)])]
    async fn right(ask: RightLook, cx: right::Context<'_>) -> Result<right::Next, Reject> {
        let jobs = ask.waits.into_iter().map(|wait| RightJob {
            contract: deep_contract(cx.lease(authority::RightWork).as_long_as_mine(), cx.hop()),
            wait,
        });
        Ok(right::Next::Map(jobs.collect()))
    }

    #[agent(owns = [LeftWork], tools = [measure], to = [lg])]
    async fn lw(job: LeftJob, cx: lw::Context<'_>) -> Result<lw::Next, Reject> {
        let n = cx.call(tools::measure, job.wait).await?;
        tokio::time::sleep(Duration::from_millis(n)).await;
        Ok(lw::Next::Lg(format!("l{n}")))
    }

    #[agent(owns = [RightWork], tools = [measure], to = [rg])]
    async fn rw(job: RightJob, cx: rw::Context<'_>) -> Result<rw::Next, Reject> {
        let n = cx.call(tools::measure, job.wait).await?;
        tokio::time::sleep(Duration::from_millis(n)).await;
        Ok(rw::Next::Rg(format!("r{n}")))
    }

    #[agent(owns = [LeftGather], join = [lw: [String]], to = [judge])]
    async fn lg(all: lg::Joined, _cx: lg::Context<'_>) -> Result<lg::Next, Reject> {
        let seen: Vec<String> = all.lw.iter().map(shown).collect();
        Ok(lg::Next::Judge(format!("[{}]", seen.join(" "))))
    }

    #[agent(owns = [RightGather], join = [rw: [String]], quorum = 1, to = [judge])]
    async fn rg(all: rg::Joined, _cx: rg::Context<'_>) -> Result<rg::Next, Reject> {
        let seen: Vec<String> = all.rw.iter().map(shown).collect();
        Ok(rg::Next::Judge(format!("[{}]", seen.join(" "))))
    }

    #[agent(owns = [Judge], join = [left: String, right: String], to = [END])]
    async fn judge(views: judge::Joined, _cx: judge::Context<'_>) -> Result<judge::Next, Reject> {
        Ok(judge::Next::End(vec![
            shown(&views.left),
            shown(&views.right),
        ]))
    }
}

fn twin_executor() -> twin::Workflow {
    twin::Workflow::new(
        (),
        Calls {
            made: AtomicU32::new(0),
        },
    )
}

#[test]
fn max_hops_counts_every_item_of_two_maps_inside_two_branches() {
    // lead; left, three lw, lg; right, two rw, rg; judge.
    assert_eq!(twin::MAX_HOPS, 1 + 5 + 4 + 1);
}

/// The left and the right map's items.
type Waits<'a> = (&'a [u64], &'a [u64]);

#[tokio::test(start_paused = true)]
async fn two_branches_mapping_inside_themselves_resume_from_every_cut() {
    let cases: [(Waits<'_>, [&str; 2]); 4] = [
        (
            (&[3, 1, 2], &[5, 1]),
            [
                "[l3 l1 l2]",
                &format!(
                    "[{} r1]",
                    "cancelled: the join's quorum of 1 done branches was reached first"
                ),
            ],
        ),
        (
            (&[], &[4, 2]),
            [
                "[]",
                &format!(
                    "[{} r2]",
                    "cancelled: the join's quorum of 1 done branches was reached first"
                ),
            ],
        ),
        ((&[2], &[]), ["[l2]", "[]"]),
        ((&[], &[]), ["[]", "[]"]),
    ];
    for ((left, right), output) in cases {
        let ledger = Arc::new(MemoryLedger::new());
        let done = twin_executor()
            .with_ledger(ledger.clone())
            .run((left.to_vec(), right.to_vec()))
            .await
            .unwrap();
        assert_eq!(done.output, output, "{left:?} {right:?}");
        let run_id = done.transcript.run_id();
        let whole = ledger.records(run_id).unwrap();
        ledger.verify_run(run_id).unwrap();
        resumes_record_for_record(
            &ledger,
            &whole,
            run_id,
            &done.output,
            |crashed| async move {
                let wf = twin_executor().with_ledger(crashed);
                let resumed = wf.resume(run_id).await;
                (resumed, wf.deps().made.load(Ordering::SeqCst))
            },
        )
        .await;
        let replaying = twin_executor();
        let report = replaying.replay(&whole).await.unwrap();
        assert!(report.is_identical(), "{left:?} {right:?}: {report}");
        assert_eq!(replaying.deps().made.load(Ordering::SeqCst), 0);
    }
}
