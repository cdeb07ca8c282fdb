//! Leases that are revocable: an operator revokes a lease by where it was
//! granted (`Executor::revoke(LeaseId { run_id, seq })`); the next tool
//! call made under it is refused, and the next receipt of the run rejects
//! it, whether it is the lease being delivered or the one its sender
//! worked under. Both are recorded, as every refusal and receipt is.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use workflow_core::prelude::*;
use workflow_core::tool::{ToolOutcome, call_id};
use workflow_core::{LeaseId, Revocations};

use crate::fixtures::assert_rejected;

/// What the tools share: the registry to revoke in, and the writes made.
#[derive(Default)]
pub struct Desk {
    pub revocations: Arc<Revocations>,
    pub writes: AtomicU32,
}

#[workflow(entry = first, output = u32, deps = Arc<Desk>)]
pub mod relay {
    use super::*;

    /// A handoff to `middle`.
    #[handoff]
    pub struct ToMiddle {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Relay>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
        /// Whether `middle` has its own lease revoked mid-turn.
        pub revoke_mid_turn: bool,
        /// Whether `middle` writes after that.
        pub then_write: bool,
    }

    /// A handoff to `last`.
    #[handoff]
    pub struct ToLast {
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
    }

    /// Revokes the lease granted by record 1 of the run (an operator's
    /// action, made from inside the turn to time it).
    #[tool(effect = read)]
    async fn revoke_mine(_nothing: (), desk: &Arc<Desk>) -> Result<u32, ToolError> {
        let run_id = call_id().map_or(0, |id| id.run_id);
        desk.revocations.revoke(LeaseId { run_id, seq: 1 });
        Ok(1)
    }

    /// A write under the `Relay` authority.
    #[tool(needs = Relay, effect = write)]
    async fn write(_nothing: (), desk: &Arc<Desk>) -> Result<u32, ToolError> {
        Ok(desk.writes.fetch_add(1, Ordering::SeqCst) + 1)
    }

    #[agent(owns = [Start], to = [middle])]
    async fn first(
        (revoke_mid_turn, then_write): (bool, bool),
        cx: first::Context<'_>,
    ) -> Result<first::Next, Reject> {
        Ok(first::Next::Middle(ToMiddle {
            op: Operation::new("relay", ""),
            scope: cx.lease(authority::Relay).as_long_as_mine(),
            evidence: vec![],
            open: vec![],
            stop: StopWhen::at_hop(MAX_HOPS),
            revoke_mid_turn,
            then_write,
        }))
    }

    #[agent(owns = [Relay], tools = [revoke_mine, write], to = [last])]
    async fn middle(task: ToMiddle, cx: middle::Context<'_>) -> Result<middle::Next, Reject> {
        if task.revoke_mid_turn {
            cx.call(tools::revoke_mine, ()).await?;
        }
        if task.then_write {
            cx.call(tools::write, ()).await?;
        }
        Ok(middle::Next::Last(ToLast {
            op: Operation::new("finish", ""),
            scope: cx.lease(authority::Finish).as_long_as_mine(),
            evidence: vec![],
            open: vec![],
            stop: StopWhen::at_hop(MAX_HOPS),
        }))
    }

    #[agent(owns = [Finish], to = [END])]
    async fn last(_task: ToLast, _cx: last::Context<'_>) -> Result<last::Next, Reject> {
        Ok(last::Next::End(7))
    }
}

#[tokio::test]
async fn a_lease_revoked_before_its_receipt_is_rejected_there() {
    let desk = Arc::new(Desk::default());
    let wf = relay::Workflow::new((), desk.clone());
    let mut session = wf.start((false, true));
    session.step().await.expect("first's turn");
    // Record 1 (first -> middle) waits for its receipt: revoke its lease.
    let run_id = session.transcript().run_id();
    wf.revoke(LeaseId { run_id, seq: 1 })
        .expect("no ledger to keep it");
    let aborted = session.finish().await.expect_err("revoked");
    let reason = RejectReason::LeaseRevoked {
        authority: "Relay".into(),
        seq: 1,
    };
    assert_rejected(&aborted, "first", "middle", reason.clone());
    assert_eq!(desk.writes.load(Ordering::SeqCst), 0, "`middle` never ran");
    assert_eq!(
        serde_json::to_value(&reason).unwrap()["code"],
        "lease_revoked"
    );
    // Another run of the same executor is not touched.
    let done = wf.run((false, true)).await.expect("a lease of another run");
    assert_eq!(done.output, 7);
}

#[tokio::test]
async fn a_lease_revoked_mid_turn_refuses_the_next_tool_call_under_it() {
    let desk = Arc::new(Desk::default());
    let wf = relay::Workflow::new((), desk.clone()).with_revocations(desk.revocations.clone());
    let aborted = wf.run((true, true)).await.expect_err("revoked mid-turn");
    // The write under the revoked lease was refused, and recorded so; the
    // refusal ends the turn (the tool's fallback is to abort).
    assert_eq!(desk.writes.load(Ordering::SeqCst), 0);
    let calls: Vec<_> = aborted
        .transcript
        .turns()
        .flat_map(|(_, t)| t.tool_calls.clone())
        .filter(|c| c.tool == "write")
        .collect();
    assert_eq!(calls.len(), 1);
    match &calls[0].outcome {
        ToolOutcome::Failed { error } => {
            assert_eq!(error.kind, ToolErrorKind::OutOfScope);
            assert!(error.message.contains("revoked"), "{}", error.message);
        }
        other => panic!("{other:?}"),
    }
    let error = aborted.error.to_string();
    assert!(
        error.starts_with("agent `middle`") && error.ends_with("was revoked"),
        "{error}"
    );
}

#[tokio::test]
async fn a_handoff_made_under_a_lease_revoked_mid_turn_is_rejected_at_the_next_receipt() {
    let desk = Arc::new(Desk::default());
    let wf = relay::Workflow::new((), desk.clone()).with_revocations(desk.revocations.clone());
    let aborted = wf.run((true, false)).await.expect_err("revoked mid-turn");
    // What `middle` handed on under its revoked lease is rejected at the
    // next receipt: `last` never runs.
    assert_rejected(
        &aborted,
        "middle",
        "last",
        RejectReason::LeaseRevoked {
            authority: "Relay".into(),
            seq: 1,
        },
    );
}

#[tokio::test]
async fn a_lease_revoked_mid_turn_of_a_resumed_run_refuses_the_next_tool_call_under_it() {
    // The run stops (its process dies) after `first`'s turn; resumed, the
    // executor's registry still reaches its turns.
    let desk = Arc::new(Desk::default());
    let ledger = Arc::new(workflow_core::ledger::MemoryLedger::new());
    let wf = relay::Workflow::new((), desk.clone())
        .with_revocations(desk.revocations.clone())
        .with_ledger(ledger);
    let mut session = wf.start((true, true));
    session.step().await.expect("first's turn");
    session
        .step()
        .await
        .expect_err("middle's turn: revoked mid-turn");
    assert_eq!(desk.writes.load(Ordering::SeqCst), 0);
    // A fresh run, cut after `first`'s turn, resumed: the same refusal.
    let desk2 = Arc::new(Desk::default());
    let ledger = Arc::new(workflow_core::ledger::MemoryLedger::new());
    let wf = relay::Workflow::new((), desk2.clone())
        .with_revocations(desk2.revocations.clone())
        .with_ledger(ledger);
    let mut session = wf.start((true, true));
    session.step().await.expect("first's turn");
    let run_id = session.transcript().run_id();
    drop(session);
    let aborted = wf.resume(run_id).await.expect_err("revoked mid-turn");
    assert_eq!(
        desk2.writes.load(Ordering::SeqCst),
        0,
        "the write was refused"
    );
    assert!(
        aborted.error.to_string().ends_with("was revoked"),
        "{}",
        aborted.error
    );
}
