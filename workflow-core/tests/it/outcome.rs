//! A run's outcome as one enum: completed, awaiting a decision (with what
//! the person needs to decide), stopped. The ledgers come with the prelude.

use std::sync::Arc;

use workflow_core::prelude::*;

use crate::enforcement::{order, shop};

#[tokio::test]
async fn a_suspended_run_is_an_outcome_awaiting_a_decision_not_an_error() {
    let (wf, shelf) = shop();
    let waiting = match wf.run_outcome(order("ask")).await {
        Outcome::AwaitingDecision(waiting) => waiting,
        other => panic!("not awaiting a decision: {other:?}"),
    };
    assert_eq!(waiting.agent, "picker");
    assert!(matches!(
        &waiting.reason,
        Escalation::Requested { question } if question == "may I pick the last one?"
    ));
    // What the person decides on: the suspension, ending with the transfer.
    assert_eq!(waiting.suspension.run_id(), waiting.transcript.run_id());
    assert_eq!(waiting.suspension.len(), waiting.transcript.len());
    assert!(waiting.suspension.payload_json().unwrap().contains("bolt"));
    assert_eq!(shelf.seals(), 0);
    // Deciding gives an outcome again: this one completes.
    let decided = wf
        .decide(
            &waiting.suspension,
            Decision::Approve { by: "alice".into() },
        )
        .await;
    match Outcome::from(decided) {
        Outcome::Completed(done) => assert_eq!(done.output.count, 1),
        other => panic!("not completed: {other:?}"),
    }
    assert_eq!(shelf.seals(), 1);
}

#[tokio::test]
async fn a_completed_and_a_stopped_run_are_outcomes_of_their_own() {
    let (wf, _) = shop();
    let done = wf.run_outcome(order("pick")).await;
    assert_eq!(done.transcript().len(), 4);
    assert!(matches!(done, Outcome::Completed(_)));
    let stopped = wf.run_outcome(order("swallow")).await;
    match &stopped {
        Outcome::Stopped(aborted) => {
            assert!(matches!(aborted.error, RunError::ToolFailed { .. }))
        }
        other => panic!("not stopped: {other:?}"),
    }
    // Back to the `Result` of `run`, a suspension as `RunError::Suspended`.
    assert!(stopped.into_result().is_err());
    let (wf, _) = shop();
    let waiting = wf.run_outcome(order("ask")).await.into_result();
    assert!(matches!(
        waiting.expect_err("suspended").error,
        RunError::Suspended {
            agent: "picker",
            ..
        }
    ));
}

#[tokio::test]
async fn the_prelude_brings_the_ledgers() {
    // `Ledger`, `MemoryLedger` (and `SqliteLedger` with feature `sqlite`)
    // and `LedgerRecord` come from `workflow_core::prelude::*` alone.
    let ledger: Arc<dyn Ledger> = Arc::new(MemoryLedger::new());
    let (wf, _) = shop();
    let wf = wf.with_ledger(ledger.clone());
    let run_id = wf.run_outcome(order("pick")).await.transcript().run_id();
    let records: Vec<LedgerRecord> = ledger.records(run_id).unwrap();
    assert_eq!(records.len(), 4, "START, clerk, picker, packer -> END");
}
