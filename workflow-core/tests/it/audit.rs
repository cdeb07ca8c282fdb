//! Audit mode: every run-time check still runs and its verdict is recorded
//! in the transfer's receipt, but the transfer goes through; the same
//! workflows stop in enforce mode (the default). Each test runs the fault
//! in both modes, and a clean run records no verdict.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use serde_json::json;
use workflow_core::ledger::{Ledger, MemoryLedger};
use workflow_core::prelude::*;
use workflow_core::{Mode, RunError};

use crate::enforcement::{order, shop};
use crate::fixtures::{assert_rejected, hop, receipts, route};
use crate::receipts::{Job, new_flow};

/// The failed checks recorded on every audited receipt of a run, in order.
fn verdicts(t: &workflow_core::Transcript) -> Vec<RejectReason> {
    receipts(t)
        .into_iter()
        .flat_map(|r| match r {
            Receipt::Audited { reasons } => reasons,
            _ => Vec::new(),
        })
        .collect()
}

#[tokio::test]
async fn enforce_is_the_default_and_audit_is_chosen_in_code() {
    let (wf, _) = shop();
    assert_eq!(wf.mode(), Mode::Enforce);
    assert_eq!(wf.with_mode(Mode::Audit).mode(), Mode::Audit);
}

#[tokio::test]
async fn a_forbidden_field_runs_to_end_in_audit_mode_recorded_and_stops_in_enforce_mode() {
    let mut o = order("pick");
    o.extra = json!({"ssn": "123"});
    // Enforce: rejected at the clerk's receipt; nothing picked or sealed.
    let (wf, shelf) = shop();
    let aborted = wf.run(o.clone()).await.expect_err("forbidden");
    let forbidden = RejectReason::ForbiddenField { path: "ssn".into() };
    assert_rejected(&aborted, "START", "clerk", forbidden.clone());
    assert_eq!(shelf.seals(), 0);
    // Audit: the run reaches END, the side effect happened, and the
    // receipt of the transfer that carried the field says so.
    let (wf, shelf) = shop();
    let done = wf
        .with_mode(Mode::Audit)
        .run(o)
        .await
        .expect("audit lets it through");
    assert_eq!(shelf.seals(), 1);
    let records = route(&done.transcript);
    assert_eq!(
        records[0],
        hop(
            "START",
            "clerk",
            Receipt::Audited {
                reasons: vec![forbidden.clone()]
            }
        )
    );
    assert_eq!(records.last().map(|r| r.1.as_str()), Some("END"));
    // The clerk passes the field on (as `card.ssn`): recorded there too.
    assert_eq!(verdicts(&done.transcript), [forbidden.clone(), forbidden]);
    assert!(
        done.transcript
            .to_string()
            .contains("[AUDIT: would reject: payload carries forbidden field `ssn`]"),
        "{}",
        done.transcript
    );
    // The run summary lists every verdict under a heading that says so.
    let summary = done.transcript.summary();
    assert_eq!(
        summary.audit,
        [
            "#0 START -> clerk: would reject: payload carries forbidden field `ssn`",
            "#1 clerk -> picker: would reject: payload carries forbidden field `ssn`",
        ]
    );
    let text = summary.to_string();
    assert!(
        text.contains("AUDIT MODE: 2 checks failed and were let through")
            && text.contains(
                "  AUDIT: #0 START -> clerk: would reject: payload carries forbidden field `ssn`"
            ),
        "{text}"
    );
}

#[tokio::test]
async fn every_record_of_an_audited_run_says_so_and_verifies() {
    let ledger = Arc::new(MemoryLedger::new());
    let mut o = order("pick");
    o.extra = json!({"ssn": "123"});
    let (wf, _) = shop();
    let done = wf
        .with_ledger(ledger.clone())
        .with_mode(Mode::Audit)
        .run(o)
        .await
        .expect("audited");
    let run = done.transcript.run_id();
    let records = ledger.records(run).expect("records");
    assert_eq!(records.len(), 4);
    assert!(records.iter().all(|r| r.mode == Mode::Audit));
    ledger.verify_run(run).expect("verifies");
    // The mode is hashed: a record changed to enforce no longer verifies.
    let mut forged = records[2].clone();
    forged.mode = Mode::Enforce;
    assert_ne!(forged.compute_hash(), records[2].hash);
    // An enforced run's records do not write the mode at all.
    let (wf, _) = shop();
    let done = wf
        .with_ledger(ledger.clone())
        .run(order("pick"))
        .await
        .expect("clean");
    let records = ledger.records(done.transcript.run_id()).expect("records");
    assert!(records.iter().all(|r| r.mode == Mode::Enforce));
    let json = serde_json::to_string(&records[0]).expect("serializes");
    assert!(!json.contains("\"mode\""), "{json}");
    assert!(done.transcript.summary().audit.is_empty());
}

#[tokio::test]
async fn a_broken_invariant_is_recorded_at_every_transfer_that_breaks_it_in_audit_mode() {
    let mut o = order("pick");
    o.tenant = "globex".into();
    let (wf, shelf) = shop();
    let aborted = wf.run(o.clone()).await.expect_err("wrong tenant");
    assert!(matches!(
        aborted.error,
        RunError::Rejected {
            to: "clerk",
            reason: RejectReason::InvariantBroken { .. },
            ..
        }
    ));
    assert_eq!(shelf.picks_made(), 0);
    let (wf, shelf) = shop();
    let done = wf.with_mode(Mode::Audit).run(o).await.expect("audited");
    assert_eq!(shelf.picks_made(), 1);
    // The input and the clerk's handoff both name the wrong tenant.
    let broken: Vec<_> = verdicts(&done.transcript)
        .into_iter()
        .map(|r| match r {
            RejectReason::InvariantBroken { invariant, .. } => invariant.into_owned(),
            other => panic!("unexpected verdict {other}"),
        })
        .collect();
    assert_eq!(broken, ["tenant_pinned", "tenant_pinned"]);
    let audited: Vec<_> = route(&done.transcript)
        .into_iter()
        .filter(|r| matches!(r.2, Receipt::Audited { .. }))
        .map(|r| (r.0, r.1))
        .collect();
    assert_eq!(
        audited,
        [
            ("START".to_owned(), "clerk".to_owned()),
            ("clerk".to_owned(), "picker".to_owned())
        ]
    );
}

#[tokio::test]
async fn an_expired_scope_and_a_failed_pre_condition_are_both_recorded_on_one_receipt() {
    let job = Job {
        amount: -1,
        expires: Expiry::AtHop(0),
        ..Job::rounds(0)
    };
    let (wf, counters) = new_flow();
    let aborted = wf.run(job.clone()).await.expect_err("expired");
    assert_rejected(
        &aborted,
        "planner",
        "worker",
        RejectReason::ScopeExpired {
            authority: "Work".into(),
        },
    );
    assert_eq!(counters.runs(), [1, 0, 0]);
    let (wf, counters) = new_flow();
    let done = wf.with_mode(Mode::Audit).run(job).await.expect("audited");
    assert_eq!(counters.runs(), [1, 1, 1]);
    let found = verdicts(&done.transcript);
    // The worker's lease to the checker lasts as long as its own, which
    // had expired: the checker's receipt finds it expired too.
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(matches!(found[0], RejectReason::ScopeExpired { .. }));
    assert!(matches!(found[1], RejectReason::PreCondition { .. }));
    assert_eq!(
        found[2],
        RejectReason::ScopeExpired {
            authority: "Judge".into()
        }
    );
}

#[tokio::test]
async fn what_bounds_the_run_still_stops_it_in_audit_mode() {
    let (wf, counters) = new_flow();
    let aborted = wf
        .with_max_hops(0)
        .with_mode(Mode::Audit)
        .run(Job::rounds(0))
        .await
        .expect_err("the hop cap is not audited");
    assert_rejected(
        &aborted,
        "START",
        "planner",
        RejectReason::HopCap { max_hops: 0 },
    );
    assert_eq!(counters.runs(), [0, 0, 0]);
    assert!(!RejectReason::HopCap { max_hops: 0 }.auditable());
    assert!(RejectReason::ForbiddenField { path: "x".into() }.auditable());
}

#[tokio::test]
async fn a_clean_run_in_audit_mode_records_no_verdict() {
    let (wf, shelf) = shop();
    let done = wf
        .with_mode(Mode::Audit)
        .run(order("pick"))
        .await
        .expect("clean");
    assert_eq!(shelf.seals(), 1);
    assert!(verdicts(&done.transcript).is_empty());
    assert!(
        receipts(&done.transcript)
            .iter()
            .all(|r| *r == Receipt::Accepted)
    );
}

/// What the lead hands on: a scope until `until_hop`, and a stop part that
/// the executor can check or (`stop_in_words`) one only stated in words.
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Dig {
    /// The last hop of the worker's scope.
    pub until_hop: u32,
    /// The stop part holds only a condition in words.
    pub stop_in_words: bool,
}

/// A worker whose delegated scope expires before it starts, or whose stop
/// part has nothing checkable, and who uses the scope.
#[workflow(entry = lead, output = u32, deps = Arc<AtomicU32>)]
pub mod crew {
    use super::*;

    /// Lead -> worker, under the worker's authority until `until_hop`.
    #[handoff]
    pub struct Job {
        /// Work.
        #[operation]
        pub op: Operation,
        /// Under the worker's authority.
        #[authority]
        pub scope: Scope<authority::Dig>,
        /// None.
        #[evidence]
        pub evidence: Vec<Evidence>,
        /// None.
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        /// None.
        #[stop]
        pub stop: StopWhen,
    }

    /// The side effect: a hole dug.
    #[tool(needs = Dig, effect = write)]
    async fn dig(depth: u32, holes: &Arc<AtomicU32>) -> Result<u32, ToolError> {
        holes.fetch_add(1, Ordering::SeqCst);
        Ok(depth)
    }

    #[agent(owns = [Lead], to = [worker])]
    async fn lead(dig: Dig, cx: lead::Context<'_>) -> Result<lead::Next, Reject> {
        let stop = if dig.stop_in_words {
            StopWhen::any([]).or_when("the hole is deep enough")
        } else {
            StopWhen::at_hop(cx.hop() + 2)
        };
        Ok(lead::Next::Worker(Job {
            op: Operation::new("dig", "one hole"),
            scope: cx.lease(authority::Dig).until_hop(dig.until_hop),
            evidence: vec![],
            open: vec![],
            stop,
        }))
    }

    #[agent(owns = [Dig], tools = [dig], to = [END])]
    async fn worker(_job: Job, cx: worker::Context<'_>) -> Result<worker::Next, Reject> {
        let depth = cx.call(tools::dig, 3).await?;
        Ok(worker::Next::End(depth))
    }
}

/// A dig under a scope until `until_hop`, with a checkable stop part.
fn dig(until_hop: u32) -> Dig {
    Dig {
        until_hop,
        stop_in_words: false,
    }
}

#[tokio::test]
async fn a_stop_part_in_words_only_is_recorded_in_audit_mode_and_stops_in_enforce_mode() {
    let words = Dig {
        until_hop: crew::MAX_HOPS,
        stop_in_words: true,
    };
    let holes = Arc::new(AtomicU32::new(0));
    let wf = crew::Workflow::new((), holes.clone());
    let aborted = wf.run(words).await.expect_err("nothing checkable");
    assert_rejected(&aborted, "lead", "worker", RejectReason::StopUnchecked);
    assert_eq!(holes.load(Ordering::SeqCst), 0);
    // Audit: the hole is dug, and the receipt says enforcement would not
    // have let it happen (it was once let through with no verdict).
    let wf = crew::Workflow::new((), holes.clone()).with_mode(Mode::Audit);
    let done = wf.run(words).await.expect("audited");
    assert_eq!(holes.load(Ordering::SeqCst), 1);
    assert_eq!(verdicts(&done.transcript), [RejectReason::StopUnchecked]);
    assert_eq!(done.transcript.summary().audit.len(), 1);
}

#[tokio::test]
async fn a_tool_called_under_an_expired_scope_is_made_and_recorded_in_audit_mode() {
    // Enforce: the expired scope is rejected at the worker's receipt; no hole.
    let holes = Arc::new(AtomicU32::new(0));
    let wf = crew::Workflow::new((), holes.clone());
    let aborted = wf.run(dig(0)).await.expect_err("expired");
    let expired = RejectReason::ScopeExpired {
        authority: "Dig".into(),
    };
    assert_rejected(&aborted, "lead", "worker", expired.clone());
    assert_eq!(holes.load(Ordering::SeqCst), 0);
    // Audit: the receipt records the expiry, the call is made and its record
    // says enforcement would have refused it.
    let wf = crew::Workflow::new((), holes.clone()).with_mode(Mode::Audit);
    let done = wf.run(dig(0)).await.expect("audited");
    assert_eq!(done.output, 3);
    assert_eq!(holes.load(Ordering::SeqCst), 1);
    assert_eq!(verdicts(&done.transcript), [expired]);
    let calls: Vec<_> = done
        .transcript
        .turns()
        .flat_map(|(_, t)| t.tool_calls.clone())
        .collect();
    assert_eq!(calls.len(), 1);
    assert_eq!(
        calls[0].audit.as_deref(),
        Some("the scope over authority `Dig` has expired")
    );
    // A live scope: no verdict anywhere, on the receipts or the call.
    let wf = crew::Workflow::new((), holes.clone()).with_mode(Mode::Audit);
    let done = wf.run(dig(crew::MAX_HOPS)).await.expect("clean");
    assert!(verdicts(&done.transcript).is_empty());
    assert!(
        done.transcript
            .turns()
            .all(|(_, t)| t.tool_calls.iter().all(|c| c.audit.is_none()))
    );
}

#[tokio::test]
async fn replay_under_enforcement_names_the_first_transition_it_would_have_stopped() {
    use workflow_core::ledger::Difference;
    // The ssn is caught at #0 (the clerk aborts); the card number only at
    // #1 (the picker escalates to a person): each is named where it is.
    for (extra, seq, reason) in [
        (
            json!({"ssn": "123"}),
            0,
            "payload carries forbidden field `ssn`",
        ),
        (
            json!({"number": 4111}),
            1,
            "payload carries forbidden field `card.number`",
        ),
    ] {
        let ledger = Arc::new(MemoryLedger::new());
        let mut o = order("pick");
        o.extra = extra;
        let (wf, _) = shop();
        let done = wf
            .with_ledger(ledger.clone())
            .with_mode(Mode::Audit)
            .run(o)
            .await
            .expect("audited");
        let records = ledger.records(done.transcript.run_id()).expect("records");
        let (enforcing, shelf) = shop();
        let report = enforcing.replay(&records).await.expect("replays");
        let d = report.divergence.clone().expect("enforcement stops it");
        assert_eq!(
            (d.seq, d.difference),
            (
                seq,
                Difference::Enforced {
                    reason: reason.to_owned()
                }
            ),
            "{report}"
        );
        assert!(
            report
                .to_string()
                .contains("recorded in audit mode, stopped by enforcement here"),
            "{report}"
        );
        assert_eq!(shelf.seals(), 0, "the replay sealed nothing");
        // Replayed in audit mode, it replays identically.
        let (auditing, _) = shop();
        let report = auditing
            .with_mode(Mode::Audit)
            .replay(&records)
            .await
            .expect("replays");
        assert!(report.is_identical(), "{report}");
    }
}
