//! Enforcement at run time: tools that fail fast, are scope-checked,
//! retried and recorded; budgets and the run deadline; size limits,
//! forbidden fields, invariant checks and gates on every transfer; the
//! uncertainty rule; rejections routed to a person or back to the sender;
//! suspended runs and the decisions that resume them.
//!
//! Each test asserts the exact outcome and what was recorded, and that the
//! side effect behind the check did not happen: it fails if its check is
//! removed.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use workflow_core::prelude::*;
use workflow_core::tool::ToolOutcome;
use workflow_core::{Escalation, Gate, RunError};

use crate::fixtures::{assert_rejected, escalated, receipts, rejection};

/// What the tools touched.
#[derive(Debug, Default)]
pub struct Shelf {
    /// Items picked.
    picks: AtomicU32,
    /// Failures `flaky` has left before it answers.
    flaky_left: AtomicU32,
    /// Parcels sealed (the side effect that matters).
    seals: AtomicU32,
}

impl Shelf {
    pub fn seals(&self) -> u32 {
        self.seals.load(Ordering::SeqCst)
    }

    pub fn picks_made(&self) -> u32 {
        self.picks.load(Ordering::SeqCst)
    }
}

/// The workflow input: what each scenario does.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct Order {
    /// The tenant the order is for.
    pub tenant: String,
    /// The item.
    pub item: String,
    /// A note (its length tests the size limit).
    pub note: String,
    /// Extra fields passed along (to test forbidden fields).
    pub extra: serde_json::Value,
    /// Questions the clerk leaves open.
    pub open: Vec<String>,
    /// What the picker does.
    pub picker: String,
}

pub fn order(picker: &str) -> Order {
    Order {
        tenant: "acme".into(),
        item: "bolt".into(),
        note: "handle with care".into(),
        extra: json!({}),
        open: vec![],
        picker: picker.into(),
    }
}

/// The workflow output (not a handoff).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Parcel {
    /// What was packed.
    pub item: String,
    /// How many.
    pub count: u32,
}

#[workflow(entry = clerk, output = Parcel, deps = Arc<Shelf>)]
pub mod shop {
    use super::*;

    /// The tenant is pinned; social security and card numbers never travel.
    #[invariants(forbid = ["ssn", "card.number"], check = [tenant_pinned])]
    pub struct Root {
        /// The one tenant of the run.
        pub tenant: String,
    }

    /// A payload naming a tenant names the pinned one.
    fn tenant_pinned(root: &Root, transfer: &TransferView<'_>) -> Result<(), String> {
        match transfer.payload.get("tenant") {
            Some(t) if *t != json!(root.tenant) => {
                Err(format!("tenant {t} is not the pinned {:?}", root.tenant))
            }
            _ => Ok(()),
        }
    }

    /// Clerk -> picker.
    #[handoff(max_bytes = 1024)]
    pub struct PickTask {
        /// Pick.
        #[operation]
        pub op: Operation,
        /// Under the picker's authority.
        #[authority]
        pub scope: Scope<authority::Pick>,
        /// What the clerk relied on.
        #[evidence]
        pub evidence: Vec<Evidence>,
        /// What the clerk left open.
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        /// None.
        #[stop]
        pub stop: StopWhen,
        /// The tenant.
        pub tenant: String,
        /// The item.
        pub item: String,
        /// The note.
        pub note: String,
        /// The payment card, as the clerk passes it on (the order's extra
        /// fields).
        pub card: serde_json::Value,
        /// What the picker does.
        pub picker: String,
    }

    /// Picker -> packer.
    #[handoff(max_tokens = 200)]
    pub struct PackTask {
        /// Pack.
        #[operation]
        pub op: Operation,
        /// Under the packer's authority.
        #[authority]
        pub scope: Scope<authority::Pack>,
        /// What the picker relied on.
        #[evidence]
        pub evidence: Vec<Evidence>,
        /// What is still open.
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        /// None.
        #[stop]
        pub stop: StopWhen,
        /// The item.
        pub item: String,
        /// How many.
        pub count: u32,
    }

    /// Finds an item; nothing for `nothing`.
    #[tool(needs = Pick, effect = read)]
    async fn pick(item: String, shelf: &Arc<Shelf>) -> Result<Vec<String>, ToolError> {
        shelf.picks.fetch_add(1, Ordering::SeqCst);
        Ok(if item == "nothing" {
            vec![]
        } else {
            vec![item]
        })
    }

    /// Busy (503) while it has failures left.
    #[tool(needs = Pick, retries = 2, backoff_ms = 1, effect = read)]
    async fn flaky(n: u32, shelf: &Arc<Shelf>) -> Result<u32, ToolError> {
        let left = shelf.flaky_left.load(Ordering::SeqCst);
        if left > 0 {
            shelf.flaky_left.store(left - 1, Ordering::SeqCst);
            return Err(ToolError::status("flaky", 503, "busy"));
        }
        Ok(n)
    }

    /// Never finds the code: a 404, escalated.
    #[tool(needs = Pick, then = escalate, effect = read)]
    async fn scan(code: String, _shelf: &Arc<Shelf>) -> Result<u32, ToolError> {
        Err(ToolError::status("scan", 404, format!("no code {code}")))
    }

    /// Seals a parcel: the side effect.
    #[tool(needs = Pack, effect = write)]
    async fn seal(count: u32, shelf: &Arc<Shelf>) -> Result<u32, ToolError> {
        shelf.seals.fetch_add(1, Ordering::SeqCst);
        Ok(count)
    }

    #[agent(owns = [Take], to = [picker])]
    async fn clerk(order: Order, cx: clerk::Context<'_>) -> Result<clerk::Next, Reject> {
        Ok(clerk::Next::Picker(PickTask {
            op: Operation::new("pick", order.item.clone()),
            scope: cx.lease(authority::Pick).as_long_as_mine(),
            evidence: vec![],
            open: order
                .open
                .iter()
                .map(|q| Uncertainty::new(q.clone(), "a wrong parcel"))
                .collect(),
            stop: StopWhen::at_hop(cx.hop() + 8),
            tenant: order.tenant,
            item: order.item,
            note: order.note,
            card: order.extra,
            picker: order.picker,
        }))
    }

    /// Does what `task.picker` says. Rejections at its receipt go to a person.
    #[agent(owns = [Pick], tools = [pick, flaky, scan], to = [packer], on_reject = escalate)]
    async fn picker(task: PickTask, cx: picker::Context<'_>) -> Result<picker::Next, Reject> {
        let returned = cx.returned();
        let approved = cx.approval().is_some();
        let mut count = 1;
        let mut open = task.open.clone();
        let mut evidence = vec![];
        let behaviour = task.picker.as_str();
        match behaviour.split_once(':').unwrap_or((behaviour, "")) {
            ("pick", _) => count = cx.call(tools::pick, task.item.clone()).await?.len() as u32,
            ("swallow", _) => {
                // Ignores the empty result and carries on with a guess.
                let _ = cx.call(tools::pick, "nothing".to_owned()).await;
            }
            ("flaky", _) => count = cx.call(tools::flaky, 2).await?,
            ("scan", _) if !approved => count = cx.call(tools::scan, "x1".into()).await?,
            ("ask", _) if !approved => {
                return Err(Reject::escalate("may I pick the last one?"));
            }
            ("charge", n) => {
                let n = n.parse().unwrap_or(0);
                cx.charge(Usage::tokens(n, 0))?;
            }
            ("sleep", ms) => {
                tokio::time::sleep(Duration::from_millis(ms.parse().unwrap_or(0))).await;
            }
            ("drop", _) if returned.is_none() => open.clear(),
            ("resolve", _) => {
                evidence = open
                    .drain(..)
                    .map(|u| Evidence::complete("picker", "checked").resolving(u.question))
                    .collect();
            }
            ("zero", _) if returned.is_none() => count = 0,
            ("zero-always", _) => count = 0,
            ("big", _) => {}
            _ => {}
        }
        let item = if behaviour == "big" {
            "x".repeat(1_000)
        } else {
            task.item
        };
        // A picker that spends tokens gives the packing a token budget.
        let stop = if behaviour.starts_with("charge") {
            StopWhen::at_hop(MAX_HOPS).or_tokens(50)
        } else {
            StopWhen::at_hop(MAX_HOPS)
        };
        Ok(picker::Next::Packer(PackTask {
            op: Operation::new("pack", "pack it"),
            scope: cx.lease(authority::Pack).as_long_as_mine(),
            evidence,
            open,
            stop,
            item,
            count,
        }))
    }

    /// Packs; what it rejects goes back to the picker, once.
    #[agent(owns = [Pack], tools = [seal], to = [END], on_reject = sender(max = 1))]
    #[pre(task.count > 0, "something to pack")]
    async fn packer(task: PackTask, cx: packer::Context<'_>) -> Result<packer::Next, Reject> {
        let count = cx.call(tools::seal, task.count).await?;
        Ok(packer::Next::End(Parcel {
            item: task.item,
            count,
        }))
    }
}

fn root() -> shop::Root {
    shop::Root {
        tenant: "acme".into(),
    }
}

pub fn shop() -> (shop::Workflow, Arc<Shelf>) {
    let shelf = Arc::new(Shelf::default());
    (shop::Workflow::new(root(), shelf.clone()), shelf)
}

// ---------------------------------------------------------------------------
// Tools
// ---------------------------------------------------------------------------

#[tokio::test]
async fn a_clean_order_goes_through_and_every_tool_call_is_recorded() {
    let (wf, shelf) = shop();
    let done = wf.run(order("pick")).await.expect("completes");
    assert_eq!(
        done.output,
        Parcel {
            item: "bolt".into(),
            count: 1
        }
    );
    assert_eq!(shelf.seals(), 1);
    let turns: Vec<_> = done.transcript.turns().collect();
    assert_eq!(turns.len(), 2, "the picker's and the packer's turns");
    let (produced, picker) = turns[0];
    assert_eq!(produced, 2, "recorded with the transfer the turn produced");
    assert_eq!(picker.agent, "picker");
    assert_eq!(picker.input_seq, 1);
    let call = &picker.tool_calls[0];
    assert_eq!(call.tool, "pick");
    assert_eq!(call.arguments, r#""bolt""#);
    assert_eq!(call.attempts, 1);
    match &call.outcome {
        ToolOutcome::Ok { result, digest } => {
            assert_eq!(result, r#"["bolt"]"#);
            // The SHA-256 of the result text (`printf '["bolt"]' | sha256sum`).
            assert_eq!(
                digest,
                "b8f68fe8b86701b704b4b7d351c5a41086048a545eb845b748218227b627597d"
            );
        }
        other => panic!("unexpected outcome {other:?}"),
    }
    assert_eq!(picker.usage.tool_calls, 1);
}

#[tokio::test]
async fn an_empty_result_is_an_error_even_when_the_agent_ignores_it() {
    let (wf, shelf) = shop();
    let aborted = wf.run(order("swallow")).await.expect_err("stopped");
    match &aborted.error {
        RunError::ToolFailed { agent, error } => {
            assert_eq!(*agent, "picker");
            assert_eq!(error.kind, ToolErrorKind::Empty);
        }
        other => panic!("unexpected error: {other}"),
    }
    assert_eq!(shelf.seals(), 0, "the guess never reached the packer");
    // The failed turn is recorded, with the call that failed.
    let last = aborted.transcript.len() - 1;
    assert!(matches!(
        aborted.transcript.receipt(last),
        Some(Receipt::TurnFailed { .. })
    ));
    let turn = aborted.transcript.turn(last).expect("the turn is recorded");
    assert!(matches!(
        &turn.tool_calls[0].outcome,
        ToolOutcome::Failed { error } if error.kind == ToolErrorKind::Empty
    ));
}

#[tokio::test]
async fn a_transient_failure_is_retried_up_to_the_declared_bound() {
    let (wf, shelf) = shop();
    shelf.flaky_left.store(2, Ordering::SeqCst);
    let done = wf
        .run(order("flaky"))
        .await
        .expect("the third attempt answers");
    assert_eq!(done.output.count, 2);
    let (_, turn) = done.transcript.turns().next().expect("recorded");
    assert_eq!(turn.tool_calls[0].attempts, 3);

    let (wf, shelf) = shop();
    shelf.flaky_left.store(3, Ordering::SeqCst);
    let aborted = wf.run(order("flaky")).await.expect_err("out of retries");
    match &aborted.error {
        RunError::ToolFailed { error, .. } => assert_eq!(error.kind, ToolErrorKind::Status(503)),
        other => panic!("unexpected error: {other}"),
    }
    let turn = aborted
        .transcript
        .turn(aborted.transcript.len() - 1)
        .expect("recorded");
    assert_eq!(turn.tool_calls[0].attempts, 3, "one try and two retries");
    assert_eq!(shelf.flaky_left.load(Ordering::SeqCst), 0);
    assert_eq!(shelf.seals(), 0);
}

#[tokio::test]
async fn a_tool_failure_under_escalate_suspends_and_an_approval_runs_the_turn_again() {
    let (wf, shelf) = shop();
    let aborted = wf.run(order("scan")).await.expect_err("suspended");
    match &aborted.error {
        RunError::Suspended {
            agent,
            reason: Escalation::ToolFailed { error },
        } => {
            assert_eq!(*agent, "picker");
            assert_eq!(error.kind, ToolErrorKind::Status(404));
        }
        other => panic!("unexpected error: {other}"),
    }
    assert_eq!(shelf.seals(), 0);
    // The suspension travels as bytes, and a fresh executor (no ledger)
    // carries the run on.
    let bytes = aborted.suspension().expect("a suspension").to_bytes();
    // Kept for as long as the decision takes: no spare capacity (the JSON
    // writer's doubling left up to half of it unused).
    assert_eq!(bytes.capacity(), bytes.len());
    let suspension = Suspension::from_bytes(&bytes).expect("reads back");
    assert_eq!(suspension.run_id(), aborted.transcript.run_id());
    let (wf, shelf) = shop();
    let done = wf
        .decide(&suspension, Decision::Approve { by: "ann".into() })
        .await
        .expect("the approved turn runs");
    assert_eq!(done.output.count, 1);
    assert_eq!(shelf.seals(), 1);
    let approved = receipts(&done.transcript)
        .into_iter()
        .filter(|r| matches!(r, Receipt::Approved { by, edited: false } if by == "ann"))
        .count();
    assert_eq!(approved, 1);
}

#[tokio::test]
async fn an_agent_can_ask_for_a_decision_and_sees_the_approval() {
    let (wf, _) = shop();
    let aborted = wf.run(order("ask")).await.expect_err("suspended");
    assert!(matches!(
        &aborted.error,
        RunError::Suspended { reason: Escalation::Requested { question }, .. } if question == "may I pick the last one?"
    ));
    let suspension = aborted.suspension().expect("a suspension");
    let (wf, shelf) = shop();
    let rejected = wf
        .decide(
            &suspension,
            Decision::Reject {
                by: "bob".into(),
                note: "not today".into(),
            },
        )
        .await
        .expect_err("a person rejected it");
    assert!(matches!(
        &rejected.error,
        RunError::Rejected { reason: RejectReason::HumanRejected { by, note }, .. } if by == "bob" && note == "not today"
    ));
    assert_eq!(shelf.seals(), 0);
    let done = wf
        .decide(&suspension, Decision::Approve { by: "ann".into() })
        .await
        .expect("approved: the picker goes on");
    assert_eq!(done.output.count, 1);
}

#[tokio::test]
async fn a_decision_on_a_run_another_holder_has_claimed_is_refused_and_records_nothing() {
    use workflow_core::ledger::{Ledger, LedgerError, MemoryLedger};
    let ledger = Arc::new(MemoryLedger::new());
    let (wf, shelf) = shop();
    let wf = wf.with_ledger(ledger.clone());
    let aborted = wf.run(order("ask")).await.expect_err("suspended");
    let run = aborted.transcript.run_id();
    let suspension = wf.suspension(run).expect("suspended in the ledger");
    let before = ledger.records(run).unwrap();
    // The suspended run released its lease: another reviewer claims it.
    let held = ledger
        .claim(run, "another reviewer", Duration::from_secs(60))
        .expect("a suspended run is free");
    let refused = wf
        .decide(&suspension, Decision::Approve { by: "ann".into() })
        .await
        .expect_err("the run is claimed");
    assert!(
        matches!(&refused.error, RunError::Ledger(LedgerError::Claimed { holder, .. }) if holder == "another reviewer"),
        "{}",
        refused.error
    );
    assert_eq!(ledger.records(run).unwrap(), before, "nothing recorded");
    assert_eq!(shelf.seals(), 0);
    ledger.release(&held).unwrap();
    let done = wf
        .decide(&suspension, Decision::Approve { by: "ann".into() })
        .await
        .expect("decided once released");
    assert_eq!(done.output.count, 1);
}

#[tokio::test]
async fn a_tool_call_past_the_tool_call_budget_is_refused() {
    let shelf = Arc::new(Shelf::default());
    let wf =
        shop::Workflow::new(root(), shelf.clone()).with_budget(Budget::default().max_tool_calls(1));
    let aborted = wf
        .run(order("pick"))
        .await
        .expect_err("the budget stops it");
    match &aborted.error {
        RunError::Rejected {
            to,
            reason:
                RejectReason::BudgetExhausted {
                    budget,
                    limit,
                    spent,
                },
            ..
        } => {
            assert_eq!(*to, "packer");
            assert_eq!((budget.as_ref(), *limit, *spent), ("tool_calls", 1, 1));
        }
        other => panic!("unexpected error: {other}"),
    }
    assert_eq!(shelf.seals(), 0);
    // With a budget of two, the packer's call goes through.
    let shelf = Arc::new(Shelf::default());
    let wf =
        shop::Workflow::new(root(), shelf.clone()).with_budget(Budget::default().max_tool_calls(2));
    wf.run(order("pick")).await.expect("within the budget");
    assert_eq!(shelf.seals(), 1);
}

// ---------------------------------------------------------------------------
// Budgets and the deadline
// ---------------------------------------------------------------------------

#[tokio::test]
async fn charging_past_the_token_budget_stops_the_run() {
    let shelf = Arc::new(Shelf::default());
    let wf =
        shop::Workflow::new(root(), shelf.clone()).with_budget(Budget::default().max_tokens(100));
    let aborted = wf.run(order("charge:150")).await.expect_err("over budget");
    assert_eq!(
        aborted.error,
        RunError::BudgetExhausted {
            agent: "picker",
            budget: "tokens".into(),
            limit: 100,
            spent: 150,
        }
    );
    assert_eq!(shelf.seals(), 0);
    let turn = aborted
        .transcript
        .turn(aborted.transcript.len() - 1)
        .expect("recorded");
    assert_eq!(turn.usage.input_tokens, 150);
    // Spending exactly the budget is allowed, but nothing is left for the
    // next receipt.
    let wf =
        shop::Workflow::new(root(), shelf.clone()).with_budget(Budget::default().max_tokens(100));
    let aborted = wf.run(order("charge:100")).await.expect_err("nothing left");
    assert!(matches!(
        rejection(&aborted.error),
        (_, "packer", RejectReason::BudgetExhausted { .. })
    ));
    // Within it, the run completes and the usage is on the record.
    let wf =
        shop::Workflow::new(root(), shelf.clone()).with_budget(Budget::default().max_tokens(100));
    let done = wf.run(order("charge:40")).await.expect("within the budget");
    let charged: u64 = done
        .transcript
        .turns()
        .map(|(_, t)| t.usage.input_tokens)
        .sum();
    assert_eq!(charged, 40);
}

#[tokio::test]
async fn the_run_deadline_rejects_late_transfers_and_stops_long_turns() {
    let shelf = Arc::new(Shelf::default());
    let wf = shop::Workflow::new(root(), shelf.clone()).with_deadline(Duration::ZERO);
    let aborted = wf.run(order("pick")).await.expect_err("too late");
    assert!(matches!(
        rejection(&aborted.error),
        (_, "clerk", RejectReason::DeadlinePassed { after_ms: 0 })
    ));

    let wf = shop::Workflow::new(root(), shelf.clone()).with_deadline(Duration::from_millis(80));
    let started = std::time::Instant::now();
    let aborted = wf.run(order("sleep:5000")).await.expect_err("cut");
    assert_eq!(
        aborted.error,
        RunError::DeadlinePassed {
            agent: "picker",
            after_ms: 80
        }
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "cut at the deadline"
    );
    assert_eq!(shelf.seals(), 0);
}

// ---------------------------------------------------------------------------
// Every transfer: size, forbidden fields, invariants, the gate
// ---------------------------------------------------------------------------

#[tokio::test]
async fn an_oversized_payload_is_rejected_not_truncated() {
    let (wf, shelf) = shop();
    let mut o = order("pick");
    o.note = "n".repeat(2_000);
    let aborted = wf.run(o).await.expect_err("too large");
    match escalated(&aborted.error) {
        RejectReason::TooLarge { unit, size, max } => {
            assert_eq!(unit, "bytes");
            assert_eq!(*max, 1024);
            assert!(*size > 2_000);
        }
        other => panic!("unexpected reason {other}"),
    }
    assert_eq!(
        shelf.picks.load(Ordering::SeqCst),
        0,
        "the picker never ran"
    );
    // Tokens, counted by the executor's counter (the default: 4 bytes each).
    // Returned to the picker (the packer's route), which sends the same
    // again: rejected as resent unchanged, and the run stops.
    let (wf, shelf) = shop();
    let aborted = wf.run(order("big")).await.expect_err("too many tokens");
    assert!(
        matches!(&aborted.error, RunError::Rejected { to: "packer", .. }),
        "{}",
        aborted.error
    );
    let rejected = receipts(&aborted.transcript)
        .into_iter()
        .find_map(|r| match r {
            Receipt::Rejected {
                reason: RejectReason::TooLarge { unit, max, .. },
            } => Some((unit, max)),
            _ => None,
        });
    assert_eq!(rejected, Some(("tokens".into(), 200)));
    assert_eq!(shelf.seals(), 0);
}

#[tokio::test]
async fn a_forbidden_field_never_travels() {
    // In the workflow input: rejected at the clerk's receipt (abort).
    for extra in [json!({"ssn": "123"}), json!({"customer": {"ssn": "123"}})] {
        let (wf, shelf) = shop();
        let mut o = order("pick");
        o.extra = extra.clone();
        let aborted = wf.run(o).await.expect_err("forbidden");
        let forbidden = RejectReason::ForbiddenField { path: "ssn".into() };
        assert_rejected(&aborted, "START", "clerk", forbidden);
        assert_eq!(shelf.picks.load(Ordering::SeqCst), 0);
    }
    // Put where the path names it by the clerk (`card.number`): rejected at
    // the picker's receipt, which escalates.
    let (wf, shelf) = shop();
    let mut o = order("pick");
    o.extra = json!({"number": 4111});
    let aborted = wf.run(o).await.expect_err("forbidden");
    assert_eq!(
        escalated(&aborted.error),
        &RejectReason::ForbiddenField {
            path: "card.number".into()
        }
    );
    assert_eq!(shelf.picks.load(Ordering::SeqCst), 0);
    // A value that happens to read `ssn` is not a field.
    let (wf, _) = shop();
    let mut o = order("pick");
    o.extra = json!({"label": "ssn", "card": {"kind": "debit"}});
    wf.run(o).await.expect("no forbidden field");
}

#[tokio::test]
async fn a_forbidden_field_that_is_null_carries_nothing_and_travels() {
    // What an `Option` field set to `None` is written as: in the input, and
    // where the clerk puts it under the dotted path (`card.number`).
    for extra in [json!({"ssn": null}), json!({"number": null})] {
        let (wf, shelf) = shop();
        let mut o = order("pick");
        o.extra = extra;
        wf.run(o).await.expect("null is not carried");
        assert_eq!(shelf.picks.load(Ordering::SeqCst), 1);
    }
}

#[tokio::test]
async fn a_broken_invariant_is_rejected_at_every_transfer() {
    let (wf, shelf) = shop();
    let mut o = order("pick");
    o.tenant = "globex".into();
    // The workflow input itself names the tenant: rejected at the clerk's
    // receipt, before any agent runs.
    let aborted = wf.run(o).await.expect_err("wrong tenant");
    match &aborted.error {
        RunError::Rejected {
            to: "clerk",
            reason: RejectReason::InvariantBroken { invariant, message },
            ..
        } => {
            assert_eq!(invariant, "tenant_pinned");
            assert!(message.contains("globex"), "{message}");
        }
        other => panic!("unexpected error: {other}"),
    }
    assert_eq!(shelf.picks.load(Ordering::SeqCst), 0);
}

/// A gate that denies one item: the shape a Rego policy plugs into.
struct DenyItem(&'static str);

impl Gate for DenyItem {
    fn name(&self) -> std::borrow::Cow<'static, str> {
        "deny-item".into()
    }
    fn check(&self, input: &serde_json::Value) -> Result<(), Vec<String>> {
        // The documented input shape.
        for key in [
            "workflow",
            "run_id",
            "hop",
            "sender",
            "receiver",
            "payload_type",
            "contract",
            "payload",
            "root",
        ] {
            if input.get(key).is_none() {
                return Err(vec![format!("the input lacks `{key}`")]);
            }
        }
        if input["payload"]["item"] == self.0 {
            return Err(vec![format!(
                "{} is not sold to {}",
                self.0, input["root"]["tenant"]
            )]);
        }
        Ok(())
    }
}

#[tokio::test]
async fn a_gate_sees_every_transfer_and_its_deny_is_a_rejection() {
    let shelf = Arc::new(Shelf::default());
    let wf = shop::Workflow::new(root(), shelf.clone()).with_gate(Arc::new(DenyItem("dynamite")));
    let mut o = order("pick");
    o.item = "dynamite".into();
    let aborted = wf.run(o).await.expect_err("denied");
    let denied = RejectReason::Denied {
        gate: "deny-item".into(),
        messages: vec![r#"dynamite is not sold to "acme""#.into()],
    };
    assert_rejected(&aborted, "START", "clerk", denied);
    assert_eq!(shelf.picks.load(Ordering::SeqCst), 0);
    // Other items pass the same gate on every transfer.
    let done = wf.run(order("pick")).await.expect("allowed");
    assert_eq!(done.transcript.len(), 4);
}

// ---------------------------------------------------------------------------
// Uncertainty
// ---------------------------------------------------------------------------

#[tokio::test]
async fn open_questions_are_carried_resolved_or_handed_to_the_caller_never_dropped() {
    let with_open = |picker: &str| Order {
        open: vec!["is it the right size?".into()],
        ..order(picker)
    };
    // Resolved with evidence.
    let (wf, _) = shop();
    let done = wf.run(with_open("resolve")).await.expect("resolved");
    assert!(done.transcript.unresolved().is_empty());
    // Carried forward to the packer, whose output is not a handoff: the
    // question goes to the caller with it, on the record.
    let (wf, _) = shop();
    let done = wf.run(with_open("pick")).await.expect("carried");
    assert_eq!(done.transcript.unresolved(), ["is it the right size?"]);
    // Dropped: the packer's receipt rejects it and returns it to the
    // picker, which carries it the second time.
    let (wf, shelf) = shop();
    let done = wf
        .run(with_open("drop"))
        .await
        .expect("handled when returned");
    let r = receipts(&done.transcript);
    assert!(r.contains(&Receipt::Rejected {
        reason: RejectReason::UncertaintyDropped {
            question: "is it the right size?".into()
        }
    }));
    assert_eq!(shelf.seals(), 1);
}

// ---------------------------------------------------------------------------
// Rejection routes
// ---------------------------------------------------------------------------

#[tokio::test]
async fn a_rejection_returned_to_the_sender_is_handled_there() {
    let (wf, shelf) = shop();
    let done = wf.run(order("zero")).await.expect("the picker fixes it");
    assert_eq!(done.output.count, 1);
    assert_eq!(shelf.seals(), 1);
    let r = receipts(&done.transcript);
    assert_eq!(
        r[2],
        Receipt::Rejected {
            reason: RejectReason::PreCondition {
                condition: "task.count > 0".into(),
                message: "something to pack".into()
            }
        }
    );
    assert_eq!(r[3], Receipt::Accepted, "the fixed handoff");
}

#[tokio::test]
async fn a_returned_handoff_sent_again_unchanged_is_rejected_and_the_bound_holds() {
    let (wf, shelf) = shop();
    let aborted = wf.run(order("zero-always")).await.expect_err("not fixed");
    assert_rejected(&aborted, "picker", "packer", RejectReason::ResentUnchanged);
    assert_eq!(shelf.seals(), 0);
    // One return (`max = 1`), then the run stops.
    let rejected = receipts(&aborted.transcript)
        .iter()
        .filter(|r| matches!(r, Receipt::Rejected { .. }))
        .count();
    assert_eq!(rejected, 2);
}

#[tokio::test]
async fn an_escalated_rejection_can_be_approved_edited_or_rejected() {
    let mut bad = order("pick");
    bad.extra = json!({"number": 4111});
    let (wf, shelf) = shop();
    let aborted = wf.run(bad.clone()).await.expect_err("suspended");
    let suspension = aborted.suspension().expect("a suspension");
    assert_eq!(
        suspension.reason(),
        Some(&Escalation::Rejected {
            reason: RejectReason::ForbiddenField {
                path: "card.number".into()
            }
        })
    );

    // An edit that does not match the picker's input schema is refused and
    // nothing changes.
    let mut missing_part: serde_json::Value =
        serde_json::from_str(&suspension.payload_json().expect("reads")).expect("JSON");
    missing_part
        .as_object_mut()
        .expect("an object")
        .remove("evidence");
    let refused = wf
        .decide(
            &suspension,
            Decision::Edit {
                by: "ann".into(),
                payload: missing_part,
            },
        )
        .await
        .expect_err("refused");
    match &refused.error {
        RunError::Decision(why) => assert!(why.contains("evidence"), "{why}"),
        other => panic!("unexpected error: {other}"),
    }
    assert_eq!(shelf.picks.load(Ordering::SeqCst), 0);

    // An edit that still carries the field is checked again: suspended again.
    let mut edited: serde_json::Value =
        serde_json::from_str(&suspension.payload_json().expect("reads")).expect("JSON");
    let again = wf
        .decide(
            &suspension,
            Decision::Edit {
                by: "ann".into(),
                payload: edited.clone(),
            },
        )
        .await
        .expect_err("still forbidden");
    assert!(matches!(
        escalated(&again.error),
        RejectReason::ForbiddenField { .. }
    ));

    // An edit without the field goes through, approved and marked edited.
    edited["card"] = json!({"last4": "1111"});
    let done = wf
        .decide(
            &suspension,
            Decision::Edit {
                by: "ann".into(),
                payload: edited,
            },
        )
        .await
        .expect("the edited payload passes");
    assert_eq!(shelf.seals(), 1);
    assert!(receipts(&done.transcript).contains(&Receipt::Approved {
        by: "ann".into(),
        edited: true
    }));

    // Approving as it is overrides the check (a person's decision).
    let (wf, shelf) = shop();
    let done = wf
        .decide(&suspension, Decision::Approve { by: "cy".into() })
        .await
        .expect("approved as it is");
    assert_eq!(shelf.seals(), 1);
    assert_eq!(done.output.count, 1);
}

#[tokio::test]
async fn a_decision_on_a_run_that_is_not_suspended_is_refused() {
    let (wf, _) = shop();
    let aborted = wf.run(order("ask")).await.expect_err("suspended");
    // Its records without the escalated transfer, as a suspension's JSON.
    let mut json: serde_json::Value =
        serde_json::from_slice(&aborted.suspension().expect("a suspension").to_bytes()).unwrap();
    json["records"].as_array_mut().unwrap().pop();
    let suspension: Suspension = serde_json::from_value(json).unwrap();
    let refused = wf
        .decide(&suspension, Decision::Approve { by: "ann".into() })
        .await
        .expect_err("not suspended");
    assert!(
        matches!(refused.error, RunError::Decision(_)),
        "{}",
        refused.error
    );
    assert!(Suspension::from_bytes(&serde_json::to_vec(&suspension).unwrap()).is_err());
}

#[tokio::test]
async fn a_run_summary_shows_the_path_the_outcome_and_each_agents_share() {
    let shelf = Arc::new(Shelf::default());
    let wf =
        shop::Workflow::new(root(), shelf.clone()).with_budget(Budget::default().max_tokens(100));
    let done = wf.run(order("charge:40")).await.expect("completes");
    let summary = done.transcript.summary();
    assert_eq!(summary.path, ["clerk", "picker", "packer"]);
    assert_eq!(summary.outcome, "completed");
    let picker = &summary.agents[1];
    assert_eq!(
        (picker.name.as_str(), picker.turns, picker.tokens),
        ("picker", 1, 40)
    );
    let packer = &summary.agents[2];
    assert_eq!((packer.tool_calls, packer.failed_tool_calls), (1, 0));
    let text = summary.to_string();
    assert!(
        text.starts_with(&format!(
            "run {}: clerk -> picker -> packer (3 turns), completed\n",
            done.transcript.run_id()
        )),
        "{text}"
    );
    assert!(
        text.contains("picker           1 turn, 0 tool calls, 40 tokens"),
        "{text}"
    );

    let (wf, _) = shop();
    let aborted = wf.run(order("swallow")).await.expect_err("stopped");
    let summary = aborted.transcript.summary();
    assert!(
        summary
            .outcome
            .starts_with("failed in picker: agent `picker`: tool `pick` failed (empty result)"),
        "{}",
        summary.outcome
    );
    assert_eq!(summary.agents[1].failed_tool_calls, 1);
}

#[tokio::test]
async fn a_contracts_token_budget_stops_the_subtask() {
    let (wf, shelf) = shop();
    let aborted = wf
        .run(order("charge:60"))
        .await
        .expect_err("over the subtask's budget");
    let first = receipts(&aborted.transcript)
        .into_iter()
        .find(|r| matches!(r, Receipt::Rejected { .. }));
    assert_eq!(
        first,
        Some(Receipt::Rejected {
            reason: RejectReason::StopConditionMet {
                condition: "50 tokens spent".into()
            }
        })
    );
    assert_eq!(shelf.seals(), 0);
    // Under the subtask's budget, the packer packs.
    let (wf, shelf) = shop();
    wf.run(order("charge:40")).await.expect("within the budget");
    assert_eq!(shelf.seals(), 1);
}

#[tokio::test]
async fn progress_is_reported_as_each_turn_starts() {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let wf = shop::Workflow::new(root(), Arc::new(Shelf::default())).with_progress(move |p| {
        log.lock().unwrap().push((p.workflow, p.hop, p.agent));
    });
    let done = wf.run(order("zero")).await.expect("completes");
    let seen = seen.lock().unwrap().clone();
    // The picker's turn runs again when its handoff is returned.
    assert_eq!(
        seen,
        [
            ("shop", 0, "clerk"),
            ("shop", 1, "picker"),
            ("shop", 2, "picker"),
            ("shop", 3, "packer"),
        ]
    );
    assert_eq!(done.transcript.summary().path.len(), 4);
}

#[tokio::test]
async fn a_run_wide_limit_at_an_escalating_receipt_stops_the_run_and_asks_nobody() {
    // The picker escalates the rejections at its receipt; its input comes
    // after one hop, so a hop cap of one is reached there.
    let (wf, shelf) = shop();
    let wf = wf.with_max_hops(1);
    let aborted = wf.run(order("pick")).await.expect_err("hop cap");
    assert!(
        matches!(
            &aborted.error,
            RunError::Rejected {
                to: "picker",
                reason: RejectReason::HopCap { max_hops: 1 },
                ..
            }
        ),
        "{}",
        aborted.error
    );
    assert!(aborted.suspension().is_none(), "nothing to approve");
    assert_eq!(
        shelf.picks.load(Ordering::SeqCst),
        0,
        "the picker never ran"
    );
    let last = receipts(&aborted.transcript).pop();
    assert!(
        matches!(last, Some(Receipt::Rejected { .. })),
        "recorded as rejected, not escalated: {last:?}"
    );
}
