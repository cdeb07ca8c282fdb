//! Leases that are renewable through a recorded request: a receiver whose
//! lease is running out asks for a renewal (`cx.request_renewal(until)`),
//! and the runtime answers at once from what the lease's grantor worked
//! under (its own scope, as recorded with the transfer; the run's hop cap;
//! the run's deadline). A granted renewal is what the turn's tool calls,
//! the leases it grants and the next receipt check; the request and its
//! answer are recorded with the turn, and a replay makes them again.
//!
//! And the sender's scope on resume: every transfer records the scope its
//! sender worked under, so a run resumed with a transfer waiting for its
//! receipt (a person's edit of an escalated one) checks its lease against
//! the sender's own scope, not only the run's bounds.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use serde::{Deserialize, Serialize};
use workflow_core::ledger::{Ledger, MemoryLedger};
use workflow_core::prelude::*;
use workflow_core::{LeaseAct, RenewalOutcome, RenewalRefused, SenderScope, Transcript};

use crate::fixtures::escalated;

/// An expiry asked for, relative to when it is asked.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum Until {
    /// Up to and including this hop.
    Hop(u32),
    /// This many ms from now.
    InMs(u64),
}

impl Until {
    fn expiry(self) -> Expiry {
        match self {
            Until::Hop(hop) => Expiry::AtHop(hop),
            Until::InMs(ms) => Expiry::AtUnixMs(now_ms() + ms),
        }
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// What the run's input asks each agent to do.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Plan {
    /// The lease `origin` grants `first`.
    pub first_lease: Until,
    /// The renewal `first` asks for, if any.
    pub first_renews: Option<Until>,
    /// How long `first` waits before its tool call (ms), if it makes one.
    pub first_works_after_ms: Option<u64>,
    /// The lease `first` grants `second` (`None`: as long as its own).
    pub second_lease: Option<Until>,
    /// The renewal `second` asks for, if any.
    pub second_renews: Option<Until>,
    /// Whether `second`'s pre-condition fails (its receipt escalates).
    pub second_refuses: bool,
}

impl Plan {
    fn hops(first: u32) -> Plan {
        Plan {
            first_lease: Until::Hop(first),
            first_renews: None,
            first_works_after_ms: None,
            second_lease: None,
            second_renews: None,
            second_refuses: false,
        }
    }
}

/// The work done.
#[derive(Default)]
pub struct Desk {
    /// Calls of `work` that ran.
    pub works: AtomicU32,
}

#[workflow(entry = origin, output = u32, deps = Arc<Desk>)]
pub mod chain {
    use super::*;

    /// A handoff to `first`.
    #[handoff]
    pub struct ToFirst {
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
        pub plan: Plan,
    }

    /// A handoff to `second`.
    #[handoff]
    pub struct ToSecond {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Finish>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
        pub plan: Plan,
        /// `second`'s pre-condition.
        pub fine: bool,
    }

    /// A write under the `Work` authority.
    #[tool(needs = Work, effect = write)]
    async fn work(_nothing: (), desk: &Arc<Desk>) -> Result<u32, ToolError> {
        Ok(desk.works.fetch_add(1, Ordering::SeqCst) + 1)
    }

    #[agent(owns = [Origin], to = [first])]
    async fn origin(plan: Plan, cx: origin::Context<'_>) -> Result<origin::Next, Reject> {
        let lease = cx.lease(authority::Work);
        Ok(origin::Next::First(ToFirst {
            op: Operation::new("work", ""),
            scope: match plan.first_lease {
                Until::Hop(hop) => lease.until_hop(hop),
                Until::InMs(ms) => lease.until_unix_ms(now_ms() + ms),
            },
            evidence: vec![],
            open: vec![],
            stop: StopWhen::at_hop(MAX_HOPS),
            plan,
        }))
    }

    #[agent(owns = [Work], tools = [work], to = [second])]
    async fn first(task: ToFirst, cx: first::Context<'_>) -> Result<first::Next, Reject> {
        if let Some(until) = task.plan.first_renews {
            // Granted or not, the answer is recorded with the turn.
            let _answer = cx.request_renewal(until.expiry());
        }
        if let Some(ms) = task.plan.first_works_after_ms {
            tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
            cx.call(tools::work, ()).await?;
        }
        let lease = cx.lease(authority::Finish);
        Ok(first::Next::Second(ToSecond {
            op: Operation::new("finish", ""),
            scope: match task.plan.second_lease {
                None => lease.as_long_as_mine(),
                Some(Until::Hop(hop)) => lease.until_hop(hop),
                Some(Until::InMs(ms)) => lease.until_unix_ms(now_ms() + ms),
            },
            evidence: vec![],
            open: vec![],
            stop: StopWhen::at_hop(MAX_HOPS),
            plan: task.plan,
            fine: !task.plan.second_refuses,
        }))
    }

    #[agent(owns = [Finish], to = [END], on_reject = escalate)]
    #[pre(task.fine, "second takes only fine handoffs")]
    async fn second(task: ToSecond, cx: second::Context<'_>) -> Result<second::Next, Reject> {
        if let Some(until) = task.plan.second_renews {
            let _answer = cx.request_renewal(until.expiry());
        }
        Ok(second::Next::End(7))
    }
}

/// The answers to the renewals asked in `transcript`, in order.
fn answers(transcript: &Transcript) -> Vec<Result<Expiry, RenewalRefused>> {
    transcript
        .turns()
        .flat_map(|(_, t)| t.leases.clone())
        .filter_map(|act| match act {
            LeaseAct::Renewal { asked, outcome, .. } => Some(match outcome {
                RenewalOutcome::Granted => Ok(asked),
                RenewalOutcome::Refused(reason) => Err(reason),
            }),
            _ => None,
        })
        .collect()
}

/// The lease acts recorded with `agent`'s turns.
fn lease_acts(transcript: &Transcript, agent: &str) -> Vec<LeaseAct> {
    transcript
        .turns()
        .filter(|(_, t)| t.agent == agent)
        .flat_map(|(_, t)| t.leases.clone())
        .collect()
}

#[tokio::test]
async fn a_renewed_lease_is_accepted_past_its_old_bound() {
    // `first` works until hop 1 and hands `second` (at hop 2) a lease until
    // hop 2: past its own, so rejected...
    let plan = Plan {
        second_lease: Some(Until::Hop(2)),
        ..Plan::hops(1)
    };
    let desk = Arc::new(Desk::default());
    let aborted = chain::Workflow::new((), desk.clone())
        .run(plan)
        .await
        .expect_err("outlives its sender");
    // (`second` escalates its rejections to a person.)
    assert_eq!(
        escalated(&aborted.error),
        &RejectReason::LeaseOutlivesGrantor {
            authority: "Finish".into(),
            lease: Expiry::AtHop(2),
            grantor: Expiry::AtHop(1),
            bound: "sender_scope".into(),
        }
    );

    // ...unless `first` had its own lease renewed to hop 2 first (its
    // grantor, the entry, works under the run's hop cap of 3).
    let desk = Arc::new(Desk::default());
    let ledger = Arc::new(MemoryLedger::new());
    let done = chain::Workflow::new((), desk.clone())
        .with_ledger(ledger.clone())
        .run(Plan {
            first_renews: Some(Until::Hop(2)),
            ..plan
        })
        .await
        .expect("the renewed lease covers it");
    assert_eq!(done.output, 7);
    assert_eq!(answers(&done.transcript), vec![Ok(Expiry::AtHop(2))]);
    // The request and its answer are recorded with the turn...
    assert_eq!(
        lease_acts(&done.transcript, "first"),
        vec![LeaseAct::Renewal {
            lease: 1,
            authority: "Work".into(),
            was: Expiry::AtHop(1),
            asked: Expiry::AtHop(2),
            outcome: RenewalOutcome::Granted,
        }]
    );
    // ...in the hash-chained records, with the renewed scope `first`
    // handed on under.
    let run_id = done.transcript.run_id();
    let records = ledger.records(run_id).unwrap();
    assert_eq!(
        records[2].sender_scope,
        Some(SenderScope {
            authority: "Work".into(),
            expires: Expiry::AtHop(2),
        })
    );
    assert_eq!(records[2].turn.as_ref().unwrap().leases.len(), 1);
    assert_eq!(ledger.verify_run(run_id), Ok(()));
}

#[tokio::test]
async fn a_renewal_beyond_the_grantors_own_scope_is_refused_and_changes_nothing() {
    // `first` works until hop 2 and lends `second` as long as its own;
    // `second` asks for hop 3: past `first`'s scope.
    let desk = Arc::new(Desk::default());
    let ledger = Arc::new(MemoryLedger::new());
    let done = chain::Workflow::new((), desk.clone())
        .with_ledger(ledger.clone())
        .run(Plan {
            second_renews: Some(Until::Hop(3)),
            ..Plan::hops(2)
        })
        .await
        .expect("a refusal is an answer");
    let refused = RenewalRefused::OutlivesGrantor {
        asked: Expiry::AtHop(3),
        grantor: Expiry::AtHop(2),
        bound: "sender_scope".into(),
    };
    assert_eq!(answers(&done.transcript), vec![Err(refused.clone())]);
    assert_eq!(
        lease_acts(&done.transcript, "second"),
        vec![LeaseAct::Renewal {
            lease: 2,
            authority: "Finish".into(),
            was: Expiry::AtHop(2),
            asked: Expiry::AtHop(3),
            outcome: RenewalOutcome::Refused(refused),
        }]
    );
    let json = serde_json::to_value(lease_acts(&done.transcript, "second")).unwrap();
    assert_eq!(json[0]["outcome"]["refused"]["code"], "outlives_grantor");

    // Had `first` renewed its own lease to hop 3 (within the run's cap),
    // `second`'s renewal is within its grantor's renewed scope: granted.
    let done = chain::Workflow::new((), desk.clone())
        .run(Plan {
            first_renews: Some(Until::Hop(3)),
            second_renews: Some(Until::Hop(3)),
            ..Plan::hops(2)
        })
        .await
        .expect("completes");
    assert_eq!(
        answers(&done.transcript),
        vec![Ok(Expiry::AtHop(3)), Ok(Expiry::AtHop(3))]
    );

    // Past the run's hop cap, or with no end, a renewal is refused too.
    let done = chain::Workflow::new((), desk.clone())
        .run(Plan {
            first_renews: Some(Until::Hop(9)),
            ..Plan::hops(2)
        })
        .await
        .expect("completes");
    assert_eq!(
        answers(&done.transcript),
        vec![Err(RenewalRefused::OutlivesGrantor {
            asked: Expiry::AtHop(9),
            grantor: Expiry::AtHop(chain::MAX_HOPS),
            bound: "hop_cap".into(),
        })]
    );
}

#[tokio::test]
async fn a_renewal_past_the_run_deadline_is_refused() {
    let desk = Arc::new(Desk::default());
    let done = chain::Workflow::new((), desk.clone())
        .with_deadline(std::time::Duration::from_secs(5))
        .run(Plan {
            first_lease: Until::InMs(2_000),
            first_renews: Some(Until::InMs(60_000)),
            ..Plan::hops(2)
        })
        .await
        .expect("completes under its first lease");
    match answers(&done.transcript).as_slice() {
        [Err(RenewalRefused::OutlivesGrantor { bound, .. })] => assert_eq!(bound, "deadline"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_tool_call_after_the_old_expiry_runs_under_the_renewed_lease() {
    // `first`'s lease ends 100 ms after it is granted; it calls `work`
    // after 300 ms.
    let plan = Plan {
        first_lease: Until::InMs(100),
        first_works_after_ms: Some(300),
        ..Plan::hops(2)
    };
    let desk = Arc::new(Desk::default());
    let aborted = chain::Workflow::new((), desk.clone())
        .run(plan)
        .await
        .expect_err("the lease expired");
    assert_eq!(desk.works.load(Ordering::SeqCst), 0);
    assert!(
        aborted.error.to_string().contains("has expired"),
        "{}",
        aborted.error
    );

    // Renewed for ten seconds first: the call runs, and `second` receives a
    // lease as long as `first`'s renewed one.
    let desk = Arc::new(Desk::default());
    let done = chain::Workflow::new((), desk.clone())
        .run(Plan {
            first_renews: Some(Until::InMs(10_000)),
            ..plan
        })
        .await
        .expect("renewed");
    assert_eq!(desk.works.load(Ordering::SeqCst), 1);
    assert_eq!(done.output, 7);
}

#[tokio::test]
async fn a_replay_makes_the_same_renewals_again() {
    let desk = Arc::new(Desk::default());
    let ledger = Arc::new(MemoryLedger::new());
    let wf = chain::Workflow::new((), desk.clone()).with_ledger(ledger.clone());
    let done = wf
        .run(Plan {
            first_renews: Some(Until::Hop(3)),
            second_renews: Some(Until::Hop(9)),
            ..Plan::hops(2)
        })
        .await
        .expect("completes");
    let report = wf
        .replay_run(done.transcript.run_id())
        .await
        .expect("replays");
    // The renewals are in the turns compared: the replayed agents asked
    // the same, and were answered the same.
    assert_eq!(report.divergence, None, "{report:?}");
    assert_eq!(answers(&done.transcript).len(), 2);
}

#[tokio::test]
async fn a_resumed_receipt_checks_the_lease_against_the_senders_own_scope() {
    // `first` works until hop 2; `second` refuses the handoff (its
    // pre-condition), and the run waits for a person.
    let desk = Arc::new(Desk::default());
    let ledger = Arc::new(MemoryLedger::new());
    let wf = chain::Workflow::new((), desk.clone()).with_ledger(ledger.clone());
    let aborted = wf
        .run(Plan {
            second_refuses: true,
            ..Plan::hops(2)
        })
        .await
        .expect_err("suspended");
    let run_id = aborted.transcript.run_id();
    drop(aborted);
    // The record says what `first` worked under.
    let records = ledger.records(run_id).unwrap();
    assert_eq!(
        records.last().unwrap().sender_scope,
        Some(SenderScope {
            authority: "Work".into(),
            expires: Expiry::AtHop(2),
        })
    );

    // After a restart, a person edits the handoff: it passes the
    // pre-condition, but its lease now runs to hop 3, past `first`'s own.
    let wf = chain::Workflow::new((), desk.clone()).with_ledger(ledger.clone());
    let suspension = wf.suspension(run_id).expect("waits for a decision");
    let mut edited: serde_json::Value =
        serde_json::from_str(&suspension.payload_json().unwrap()).unwrap();
    edited["fine"] = true.into();
    edited["scope"]["expires"] = serde_json::json!({ "at_hop": 3 });
    let again = wf
        .decide(
            &suspension,
            Decision::Edit {
                by: "ann".into(),
                payload: edited.clone(),
            },
        )
        .await
        .expect_err("outlives its sender's scope");
    assert_eq!(
        escalated(&again.error),
        &RejectReason::LeaseOutlivesGrantor {
            authority: "Finish".into(),
            lease: Expiry::AtHop(3),
            grantor: Expiry::AtHop(2),
            bound: "sender_scope".into(),
        }
    );

    // Within `first`'s scope, the edit goes through.
    let suspension = wf.suspension(run_id).expect("waits again");
    edited["scope"]["expires"] = serde_json::json!({ "at_hop": 2 });
    let done = wf
        .decide(
            &suspension,
            Decision::Edit {
                by: "ann".into(),
                payload: edited,
            },
        )
        .await
        .expect("within the sender's scope");
    assert_eq!(done.output, 7);
    assert_eq!(ledger.verify_run(run_id), Ok(()));
}

#[test]
fn a_record_without_a_sender_scope_hashes_as_before() {
    // The field is hashed only when present: a record written before it
    // existed verifies unchanged, and one that has it is covered.
    let json = r#"{"workflow":"w","run_id":1,"seq":0,"hop":0,"from":"start","to":{"agent":"a"},
        "payload_type":"u32","payload_format":"json","payload":"33","receipt":{"status":"accepted"},
        "at_us":0,"prev_hash":"","hash":""}"#;
    let mut old: workflow_core::ledger::LedgerRecord = serde_json::from_str(json).unwrap();
    assert_eq!(old.sender_scope, None);
    let before = old.compute_hash();
    old.sender_scope = Some(SenderScope {
        authority: "Work".into(),
        expires: Expiry::AtHop(2),
    });
    assert_ne!(old.compute_hash(), before);
}
