//! What a live run accepts, a resumed run, a replay and a read-back accept:
//! one depth limit (`MAX_PAYLOAD_DEPTH`) everywhere, non-finite numbers and
//! keys given twice refused where they first cross, and no stored value
//! (however deep, however large a time) makes a reader panic or overflow.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use workflow_core::ledger::{GENESIS, Ledger, LedgerRecord, MemoryLedger, PayloadFormat};
use workflow_core::prelude::*;
use workflow_core::{Decision, Escalation, MAX_PAYLOAD_DEPTH, PayloadError, Suspension};

/// What the shaper is asked to hand over.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Ask {
    /// Arrays around `null` in the handoff's `value`.
    pub depth: u32,
    /// The handoff's amount, as text (`"NaN"` and `"inf"` parse).
    pub amount: String,
}

/// The end of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Seen(pub u32);

/// Turns the checker ran on an amount of 4242 (only the test of a refused
/// transfer sends it; the tests run at the same time).
pub static CHECKED: AtomicU32 = AtomicU32::new(0);

/// `depth` arrays around `null`.
pub fn nest(depth: u32) -> Value {
    (0..depth).fold(Value::Null, |v, _| Value::Array(vec![v]))
}

#[workflow(entry = shaper, output = Seen)]
pub mod deep {
    use super::*;

    /// Shaper -> checker.
    #[handoff]
    pub struct Shape {
        /// Check.
        #[operation]
        pub op: Operation,
        /// Under the checker's authority.
        #[authority]
        pub scope: Scope<authority::Check>,
        /// Nothing.
        #[evidence]
        pub evidence: Vec<Evidence>,
        /// Nothing.
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        /// Never.
        #[stop]
        pub stop: StopWhen,
        /// A number.
        pub amount: f64,
        /// A nested value.
        pub value: Value,
    }

    #[agent(owns = [Shape], to = [checker])]
    async fn shaper(spec: Ask, _cx: shaper::Context<'_>) -> Result<shaper::Next, Reject> {
        Ok(shaper::Next::Checker(shape(&spec)))
    }

    #[agent(owns = [Check], to = [END], on_reject = escalate)]
    async fn checker(shape: Shape, _cx: checker::Context<'_>) -> Result<checker::Next, Reject> {
        if shape.amount == 4242.0 {
            CHECKED.fetch_add(1, Ordering::SeqCst);
        }
        Ok(checker::Next::End(Seen(shape.amount as u32)))
    }
}

/// The handoff `spec` asks for.
pub fn shape(spec: &Ask) -> deep::Shape {
    deep::Shape {
        op: Operation::new("check", ""),
        scope: Scope::new(deep::authority::Check).until_hop(deep::MAX_HOPS),
        evidence: vec![],
        open: vec![],
        stop: StopWhen::at_hop(deep::MAX_HOPS),
        amount: spec.amount.parse().unwrap_or(0.0),
        value: nest(spec.depth),
    }
}

#[workflow(entry = sender, output = Seen)]
pub mod guarded {
    use super::*;

    /// Invariants that look at every payload.
    #[invariants(check = [small_amount])]
    pub struct Root {
        /// The largest amount.
        pub max: f64,
    }

    /// An amount over the pinned maximum never travels.
    fn small_amount(root: &Root, transfer: &TransferView<'_>) -> Result<(), String> {
        match transfer.payload.get("amount").and_then(Value::as_f64) {
            Some(a) if a > root.max => Err(format!("amount {a} is over {}", root.max)),
            _ => Ok(()),
        }
    }

    /// Sender -> receiver.
    #[handoff]
    pub struct Parcel {
        /// Receive.
        #[operation]
        pub op: Operation,
        /// Under the receiver's authority.
        #[authority]
        pub scope: Scope<authority::Receive>,
        /// Nothing.
        #[evidence]
        pub evidence: Vec<Evidence>,
        /// Nothing.
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        /// Never.
        #[stop]
        pub stop: StopWhen,
        /// A number.
        pub amount: f64,
        /// A nested value.
        pub value: Value,
    }

    #[agent(owns = [Send], to = [receiver])]
    async fn sender(spec: Ask, _cx: sender::Context<'_>) -> Result<sender::Next, Reject> {
        Ok(sender::Next::Receiver(Parcel {
            op: Operation::new("receive", ""),
            scope: Scope::new(authority::Receive).until_hop(MAX_HOPS),
            evidence: vec![],
            open: vec![],
            stop: StopWhen::at_hop(MAX_HOPS),
            amount: spec.amount.parse().unwrap_or(0.0),
            value: nest(spec.depth),
        }))
    }

    #[agent(owns = [Receive], to = [END])]
    async fn receiver(p: Parcel, _cx: receiver::Context<'_>) -> Result<receiver::Next, Reject> {
        Ok(receiver::Next::End(Seen(p.amount as u32)))
    }
}

fn spec(depth: u32, amount: &str) -> Ask {
    Ask {
        depth,
        amount: amount.into(),
    }
}

/// The `value` depth that puts the `Shape` payload exactly at the limit
/// (the struct is one level).
const AT_LIMIT: u32 = MAX_PAYLOAD_DEPTH - 1;

fn too_deep() -> RejectReason {
    RejectReason::TooDeep {
        limit: MAX_PAYLOAD_DEPTH,
    }
}

/// The reason the run was suspended for at the checker's receipt.
#[track_caller]
fn escalated_reason(error: &RunError) -> RejectReason {
    match error {
        RunError::Suspended {
            agent: "checker",
            reason: Escalation::Rejected { reason },
        } => reason.clone(),
        other => panic!("expected a suspension at the checker, got {other}"),
    }
}

/// `records` chained again (as someone who can write the file would), in
/// a fresh ledger.
fn rehashed(mut records: Vec<LedgerRecord>) -> Arc<MemoryLedger> {
    let ledger = Arc::new(MemoryLedger::new());
    let mut prev = GENESIS.to_owned();
    for r in &mut records {
        r.prev_hash = prev;
        r.hash = r.compute_hash();
        prev = r.hash.clone();
        ledger.append(r).expect("appends");
    }
    ledger
}

/// A payload a few thousand levels deep, built in code, is refused at its
/// first receipt with the depth reason (on a tokio worker's stack: the
/// encoder stops at the limit), recorded as `null`, and the checker never
/// runs; the record verifies and reads back.
#[tokio::test]
async fn a_payload_thousands_of_levels_deep_is_refused_live_with_the_depth_reason() {
    let ledger = Arc::new(MemoryLedger::new());
    let wf = Arc::new(deep::Workflow::new((), ()).with_ledger(ledger.clone()));
    let before = CHECKED.load(Ordering::SeqCst);
    // On a thread with a tokio worker's stack (2 MiB).
    let run = {
        let wf = wf.clone();
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .build()
                    .expect("a runtime");
                rt.block_on(wf.run(spec(5_000, "4242"))).map_err(Box::new)
            })
            .expect("a thread")
    };
    let aborted = run.join().expect("no overflow").expect_err("refused");
    assert_eq!(escalated_reason(&aborted.error), too_deep());
    assert!(
        aborted.error.to_string().contains("limit of 64 levels"),
        "{}",
        aborted.error
    );
    assert_eq!(CHECKED.load(Ordering::SeqCst), before, "the body never ran");
    let run_id = aborted.transcript.run_id();
    let records = ledger.records(run_id).unwrap();
    let last = records.last().unwrap();
    assert_eq!(last.payload_json().unwrap(), "null");
    ledger.verify_run(run_id).expect("verifies");
    // Resumed, the run is where it was: suspended for the same reason.
    let again = wf.resume(run_id).await.expect_err("still suspended");
    assert_eq!(escalated_reason(&again.error), too_deep());
}

/// A payload exactly at the limit is accepted live, read back, and
/// accepted again when the run is resumed after the checker's turn was cut.
#[tokio::test]
async fn a_payload_at_the_limit_is_accepted_live_read_back_and_resumed() {
    let ledger = Arc::new(MemoryLedger::new());
    let wf = deep::Workflow::new((), ()).with_ledger(ledger.clone());
    let done = wf.run(spec(AT_LIMIT, "7")).await.expect("at the limit");
    assert_eq!(done.output, Seen(7));
    let run_id = done.transcript.run_id();
    // Cut after the handoff to the checker was accepted: its turn was lost.
    let records = ledger.records(run_id).unwrap();
    let text = records[1].payload_json().expect("reads back");
    assert!(text.contains(&"[".repeat(AT_LIMIT as usize)), "{text}");
    let cut = rehashed(records[..2].to_vec());
    let wf = deep::Workflow::new((), ()).with_ledger(cut);
    let done = wf.resume(run_id).await.expect("resumes at the limit");
    assert_eq!(done.output, Seen(7));
}

/// With root invariants configured (which read every payload as JSON), a
/// deep payload still gets the depth reason, not a schema mismatch.
#[tokio::test]
async fn with_root_invariants_a_deep_payload_gets_the_depth_reason() {
    let wf = guarded::Workflow::new(guarded::Root { max: 100.0 }, ());
    let aborted = wf.run(spec(3_000, "1")).await.expect_err("refused");
    crate::fixtures::assert_rejected(&aborted, "sender", "receiver", too_deep());
    let aborted = wf.run(spec(1, "500")).await.expect_err("the invariant");
    assert!(matches!(
        crate::fixtures::rejection(&aborted.error).2,
        RejectReason::InvariantBroken { .. }
    ));
    let done = wf.run(spec(AT_LIMIT, "5")).await.expect("at the limit");
    assert_eq!(done.output, Seen(5));
}

/// NaN and both infinities are refused at their first receipt, with their
/// place and value; the resumed run says the same (before, they were
/// delivered live, recorded as `null`, and refused on resume).
#[tokio::test]
async fn non_finite_numbers_are_refused_at_the_first_receipt_and_on_resume_alike() {
    for (amount, value) in [("NaN", "NaN"), ("inf", "inf"), ("-inf", "-inf")] {
        let ledger = Arc::new(MemoryLedger::new());
        let wf = deep::Workflow::new((), ()).with_ledger(ledger.clone());
        let aborted = wf.run(spec(1, amount)).await.expect_err("refused");
        let reason = RejectReason::NonFinite {
            path: "amount".into(),
            value: value.into(),
        };
        assert_eq!(escalated_reason(&aborted.error), reason, "{amount}");
        let again = wf
            .resume(aborted.transcript.run_id())
            .await
            .expect_err("still refused");
        assert_eq!(escalated_reason(&again.error), reason, "{amount}");
    }
}

/// A stored payload deeper than the limit (written by hand, re-hashed)
/// is a typed error naming the limit when it is read back, resumed or
/// replayed: never a stack overflow.
#[tokio::test]
async fn a_stored_payload_past_the_limit_is_a_typed_error_on_read_back_resume_and_replay() {
    let ledger = Arc::new(MemoryLedger::new());
    let wf = deep::Workflow::new((), ()).with_ledger(ledger.clone());
    let run_id = wf
        .run(spec(1, "1"))
        .await
        .expect("runs")
        .transcript
        .run_id();
    let mut records = ledger.records(run_id).unwrap();
    records.truncate(2); // cut before the checker's turn
    // 5,000 one-element arrays around nil, in MessagePack.
    let mut deep_bytes = vec![0x91u8; 5_000];
    deep_bytes.push(0xc0);
    for r in &mut records {
        r.payload_format = PayloadFormat::Msgpack;
        r.payload = hex::encode(&deep_bytes);
    }
    let forged = rehashed(records.clone());
    forged.verify_run(run_id).expect("verifies");

    let error = records[1].payload_json().expect_err("too deep");
    assert!(error.to_string().contains("limit of 64 levels"), "{error}");

    let wf = deep::Workflow::new((), ()).with_ledger(forged.clone());
    let error = wf.resume(run_id).await.expect_err("too deep").error;
    assert_eq!(
        error,
        RunError::Unreadable {
            seq: 1,
            error: PayloadError::TooDeep {
                limit: MAX_PAYLOAD_DEPTH
            },
        }
    );
    let error = wf
        .replay(&forged.records(run_id).unwrap())
        .await
        .expect_err("too deep");
    assert!(error.to_string().contains("limit of 64 levels"), "{error}");
}

/// A record's stored time at the largest value (re-hashed) makes the
/// resumed run stop with a typed error when it records its next transfer,
/// never an overflow panic.
#[tokio::test]
async fn a_stored_time_at_the_maximum_is_a_typed_error_on_resume() {
    let ledger = Arc::new(MemoryLedger::new());
    let wf = deep::Workflow::new((), ()).with_ledger(ledger.clone());
    let mut session = wf.start(spec(1, "1"));
    session.step().await.expect("the shaper's turn");
    let run_id = session.transcript().run_id();
    drop(session);
    let mut records = ledger.records(run_id).unwrap();
    for r in &mut records {
        r.at_us = u64::MAX;
    }
    let forged = rehashed(records);
    let wf = deep::Workflow::new((), ()).with_ledger(forged);
    let error = wf.resume(run_id).await.expect_err("overflows").error;
    assert!(
        matches!(&error, RunError::Resume(m) if m.contains("clock overflows")),
        "{error:?}"
    );
}

/// A person's edit is held to the same limits: an edited payload too deep
/// is refused (the run stays suspended), a decision whose text repeats a
/// key is refused naming it, and a sound edit carries the run on.
#[tokio::test]
async fn an_edited_payload_is_held_to_the_depth_limit_and_refuses_a_key_twice() {
    let wf = deep::Workflow::new((), ());
    let aborted = wf.run(spec(500, "1")).await.expect_err("suspended");
    let suspension = aborted.suspension().expect("a suspension");
    // Not recorded, so not approvable as it was.
    let refused = wf
        .decide(&suspension, Decision::Approve { by: "ann".into() })
        .await
        .expect_err("nothing to approve");
    assert!(
        matches!(&refused.error, RunError::Decision(m) if m.contains("edit it instead")),
        "{}",
        refused.error
    );
    let mut payload = serde_json::to_value(shape(&spec(1, "2"))).unwrap();
    payload["value"] = nest(1_000);
    let refused = wf
        .decide(
            &suspension,
            Decision::Edit {
                by: "ann".into(),
                payload,
            },
        )
        .await
        .expect_err("too deep");
    assert!(
        matches!(&refused.error, RunError::Decision(m) if m.contains("limit of 64 levels")),
        "{}",
        refused.error
    );

    let text = r#"{"decision":"edit","by":"ann","payload":{"amount":1,"amount":1000000}}"#;
    assert_eq!(
        Decision::from_json(text),
        Err(PayloadError::DuplicateKey {
            key: "amount".into()
        })
    );
    let edit = json!({"decision": "edit", "by": "ann", "payload": shape(&spec(2, "3"))});
    let decision = Decision::from_json(&edit.to_string()).expect("a decision");
    let done = wf.decide(&suspension, decision).await.expect("edited");
    assert_eq!(done.output, Seen(3));
    // A suspension file that repeats a key is refused too.
    let mut bytes = suspension.to_bytes();
    let at = bytes.len() - 1;
    bytes.splice(at..at, br#","records":[]"#.iter().copied());
    let error = Suspension::from_bytes(&bytes).expect_err("a key twice");
    assert!(error.contains("`records` twice"), "{error}");
}

/// Stored times that jump back and forth (re-hashed) give a resumed run's
/// summary a saturated time, never an overflow.
#[tokio::test]
async fn stored_times_at_the_extremes_give_a_saturated_summary() {
    let ledger = Arc::new(MemoryLedger::new());
    let wf = crate::ledger::flow::Workflow::new((), ()).with_ledger(ledger.clone());
    let run_id = wf.run(3).await.expect("completes").transcript.run_id();
    let mut records = ledger.records(run_id).unwrap();
    for (i, r) in records.iter_mut().enumerate() {
        r.at_us = if i % 2 == 0 { 0 } else { u64::MAX };
    }
    let forged = rehashed(records);
    let wf = crate::ledger::flow::Workflow::new((), ()).with_ledger(forged);
    let done = wf.resume(run_id).await.expect("its recorded end");
    let summary = done.transcript.summary();
    let counter = summary.agents.iter().find(|a| a.name == "counter").unwrap();
    assert_eq!(counter.time_us, u64::MAX);
}

/// A stored hop number at `u32::MAX` (re-hashed) is carried, never added
/// to: the resumed run counts its hops from its records and ends.
#[tokio::test]
async fn a_stored_hop_at_the_maximum_resumes_without_overflow() {
    let ledger = Arc::new(MemoryLedger::new());
    let wf = deep::Workflow::new((), ()).with_ledger(ledger.clone());
    let run_id = wf
        .run(spec(1, "2"))
        .await
        .expect("runs")
        .transcript
        .run_id();
    let mut records = ledger.records(run_id).unwrap();
    records.truncate(2); // cut before the checker's turn
    for r in &mut records {
        r.hop = u32::MAX;
    }
    let wf = deep::Workflow::new((), ()).with_ledger(rehashed(records));
    let done = wf.resume(run_id).await.expect("resumes");
    assert_eq!(done.output, Seen(2));
    let last = done.transcript.records().unwrap().pop().unwrap();
    assert_eq!(last.hop, 2, "counted from the records: {last:?}");
}
