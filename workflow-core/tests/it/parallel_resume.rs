//! Resuming a macro-generated workflow cut inside its fan-out: the
//! branches whose outcome is recorded are read back, the cut ones run
//! again, and the run's records are those of an uncut run.

use std::sync::Arc;

use workflow_core::Executor;
use workflow_core::ledger::{Ledger, LedgerRecord, MemoryLedger};

use crate::parallel_dsl::review;

/// What two runs must agree on, record by record (not the times).
fn view(r: &LedgerRecord) -> impl PartialEq + std::fmt::Debug {
    (
        r.seq,
        r.from.to_string(),
        r.to.to_string(),
        r.receipt.clone(),
        r.lineage.clone(),
        r.payload.clone(),
    )
}

#[tokio::test]
async fn a_generated_fan_out_resumes_from_every_cut() {
    let ledger = Arc::new(MemoryLedger::new());
    let wf = review::Workflow::new((), ()).with_ledger(ledger.clone());
    // The security reviewer fails, the style reviewer approves.
    let done = wf.run("a panic".to_owned()).await.unwrap();
    let run_id = done.transcript.run_id();
    let whole = ledger.records(run_id).unwrap();
    // #0 the change, #1 #2 the starts, #3 #4 the outcomes, #5 the join,
    // #6 the ruling.
    assert_eq!(whole.len(), 7);
    for cut in 2..=5 {
        let crashed = Arc::new(MemoryLedger::new());
        for r in whole.iter().take(cut) {
            crashed.append(r).unwrap();
        }
        let wf: Executor<review::Spec> = review::Workflow::new((), ()).with_ledger(crashed.clone());
        let resumed = wf
            .resume(run_id)
            .await
            .unwrap_or_else(|e| panic!("cut after {cut} records: {}", e.error));
        assert_eq!(resumed.output, done.output, "cut after {cut} records");
        assert_eq!(
            resumed.output.seen,
            [
                "security: failed: agent `security` failed: cannot review a panic",
                "style: approve=true"
            ]
        );
        let again = crashed.records(run_id).unwrap();
        assert_eq!(
            again.iter().map(view).collect::<Vec<_>>(),
            whole.iter().map(view).collect::<Vec<_>>(),
            "cut after {cut} records"
        );
        crashed.verify_run(run_id).unwrap();
    }
}

#[tokio::test(start_paused = true)]
async fn a_map_resumes_from_every_cut() {
    use crate::parallel_map::mixed;
    let ledger = Arc::new(MemoryLedger::new());
    let wf = mixed::Workflow::new((), ()).with_ledger(ledger.clone());
    // A static fan-out, then a map over three items, the second failing.
    let done = wf.run(vec![1, 13, 2]).await.unwrap();
    let run_id = done.transcript.run_id();
    let whole = ledger.records(run_id).unwrap();
    // #0 the input, #1..#5 the static fan-out and its join, #6 the judge's
    // handoff, #7..#9 the items' starts, #10..#12 their outcomes, #13 the
    // join, #14 the end.
    assert_eq!(whole.len(), 15);
    for cut in 1..whole.len() {
        let crashed = Arc::new(MemoryLedger::new());
        for r in whole.iter().take(cut) {
            crashed.append(r).unwrap();
        }
        let wf: Executor<mixed::Spec> = mixed::Workflow::new((), ()).with_ledger(crashed.clone());
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
    }
}
