//! The ledger: every transfer committed before the receiver works, chained
//! by hashes so that any single edit, removal, reordering or cut is found.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use workflow_core::ledger::{
    Ledger, LedgerError, LedgerRecord, MemoryLedger, Tampering, VerifyError, verify,
};
use workflow_core::prelude::*;

#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Done(pub u32);

#[workflow(entry = planner, output = Done)]
pub mod flow {
    use super::*;

    #[handoff]
    pub struct Work {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Count>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
        pub left: u32,
    }

    fn work(left: u32) -> Work {
        Work {
            op: Operation::new("count", ""),
            scope: Scope::new(authority::Count).until_hop(MAX_HOPS),
            evidence: vec![],
            open: vec![],
            stop: StopWhen::at_hop(MAX_HOPS),
            left,
        }
    }

    #[agent(owns = [Plan], to = [counter])]
    async fn planner(n: u32, _cx: planner::Context<'_>) -> Result<planner::Next, Reject> {
        Ok(planner::Next::Counter(work(n)))
    }

    #[agent(owns = [Count], to = [counter(max = 5), END])]
    #[pre(task.left < 100, "at most 99 rounds")]
    async fn counter(task: Work, _cx: counter::Context<'_>) -> Result<counter::Next, Reject> {
        Ok(if task.left == 0 {
            counter::Next::End(Done(0))
        } else {
            counter::Next::Counter(work(task.left - 1))
        })
    }
}

async fn recorded_run(ledger: &Arc<MemoryLedger>, n: u32) -> (u64, usize) {
    let wf = flow::Workflow::new((), ()).with_ledger(ledger.clone());
    let (run_id, len) = match wf.run(n).await {
        Ok(done) => (done.transcript.run_id(), done.transcript.len()),
        Err(aborted) => (aborted.transcript.run_id(), aborted.transcript.len()),
    };
    (run_id, len)
}

#[tokio::test]
async fn every_transfer_is_committed_and_verifies() {
    let ledger = Arc::new(MemoryLedger::new());
    let (run_id, len) = recorded_run(&ledger, 3).await;
    let records = ledger.records(run_id).unwrap();
    assert_eq!(records.len(), len, "one ledger record per transfer");
    assert_eq!(records.len(), 6, "START, planner, 3 loops, END");
    assert!(records.iter().all(|r| r.receipt == Receipt::Accepted));
    assert_eq!(records[0].prev_hash, workflow_core::ledger::GENESIS);
    assert_eq!(ledger.verify_run(run_id), Ok(()));
}

#[tokio::test]
async fn a_rejected_transfer_is_committed_with_its_reason() {
    let ledger = Arc::new(MemoryLedger::new());
    let (run_id, _) = recorded_run(&ledger, 150).await;
    let records = ledger.records(run_id).unwrap();
    let last = records.last().unwrap();
    assert!(
        matches!(
            &last.receipt,
            Receipt::Rejected {
                reason: RejectReason::PreCondition { .. }
            }
        ),
        "{last:?}"
    );
    assert_eq!(ledger.verify_run(run_id), Ok(()));
}

#[tokio::test]
async fn runs_have_distinct_ids() {
    let ledger = Arc::new(MemoryLedger::new());
    let (a, _) = recorded_run(&ledger, 1).await;
    let (b, _) = recorded_run(&ledger, 1).await;
    assert_ne!(a, b);
    assert_eq!(ledger.runs().unwrap().len(), 2);
}

/// Every field of every record, edited one at a time, is found.
#[tokio::test]
async fn every_single_record_edit_is_found() {
    let ledger = Arc::new(MemoryLedger::new());
    let (run_id, _) = recorded_run(&ledger, 2).await;
    let clean = ledger.records(run_id).unwrap();
    type Edit = fn(&mut LedgerRecord);
    let edits: [(&str, Edit); 10] = [
        ("workflow", |r| r.workflow.push('x')),
        ("hop", |r| r.hop += 1),
        ("from", |r| {
            r.from = workflow_core::Endpoint::Agent(format!("{}x", r.from).into())
        }),
        ("to", |r| {
            r.to = workflow_core::Endpoint::Agent(format!("{}x", r.to).into())
        }),
        ("payload_type", |r| r.payload_type.push('x')),
        ("payload_format", |r| {
            r.payload_format = match r.payload_format {
                workflow_core::ledger::PayloadFormat::Msgpack => {
                    workflow_core::ledger::PayloadFormat::Json
                }
                workflow_core::ledger::PayloadFormat::Json => {
                    workflow_core::ledger::PayloadFormat::Msgpack
                }
            }
        }),
        ("payload", |r| {
            r.payload.replace_range(
                0..2,
                if r.payload.starts_with("00") {
                    "01"
                } else {
                    "00"
                },
            )
        }),
        ("receipt", |r| {
            r.receipt = Receipt::Rejected {
                reason: RejectReason::HopCap { max_hops: 1 },
            }
        }),
        ("at_us", |r| r.at_us += 1),
        ("hash", |r| {
            r.hash
                .replace_range(0..1, if r.hash.starts_with('0') { "1" } else { "0" })
        }),
    ];
    for seq in 0..clean.len() {
        for (field, edit) in &edits {
            let mut tampered = clean.clone();
            edit(&mut tampered[seq]);
            let found = verify(run_id, &tampered, None);
            assert_eq!(
                found,
                Err(Tampering::Edited { seq: seq as u32 }),
                "{field} of #{seq}"
            );
        }
    }
}

#[tokio::test]
async fn removed_reordered_and_cut_records_are_found() {
    let ledger = Arc::new(MemoryLedger::new());
    let (run_id, _) = recorded_run(&ledger, 2).await;
    let clean = ledger.records(run_id).unwrap();
    let head = ledger.head(run_id).unwrap().unwrap();

    let mut removed = clean.clone();
    removed.remove(2);
    assert_eq!(
        verify(run_id, &removed, None),
        Err(Tampering::Gap {
            expected: 2,
            found: 3
        })
    );

    let mut reordered = clean.clone();
    reordered.swap(1, 2);
    assert_eq!(
        verify(run_id, &reordered, None),
        Err(Tampering::Gap {
            expected: 1,
            found: 2
        })
    );

    let mut cut = clean.clone();
    cut.pop();
    assert_eq!(
        verify(run_id, &cut, None),
        Ok(()),
        "a clean prefix chains..."
    );
    assert_eq!(
        verify(run_id, &cut, Some((head.0, &head.1))),
        Err(Tampering::Truncated {
            last: head.0 - 1,
            head: head.0
        }),
        "...but the head finds the cut"
    );

    ledger.replace(run_id, cut);
    assert!(matches!(
        ledger.verify_run(run_id),
        Err(VerifyError::Tampered(Tampering::Truncated { .. }))
    ));

    assert_eq!(verify(run_id, &[], None), Err(Tampering::Empty));
    assert!(matches!(
        verify(run_id + 1, &clean, None),
        Err(Tampering::ForeignRun { .. })
    ));

    // Every record removed, the head kept: the run is still listed, and
    // does not verify.
    ledger.replace(run_id, Vec::new());
    assert_eq!(ledger.runs(), Ok(vec![run_id]));
    assert_eq!(
        ledger.verify_run(run_id),
        Err(VerifyError::Tampered(Tampering::Removed { head: head.0 }))
    );
}

/// A ledger that refuses records stops the run before any agent works on
/// the unrecorded transfer.
#[tokio::test]
async fn a_ledger_failure_stops_the_run() {
    struct Full;
    impl Ledger for Full {
        fn append(&self, _: &LedgerRecord) -> Result<(), workflow_core::ledger::LedgerError> {
            Err(workflow_core::ledger::LedgerError::Storage(
                "disk full".into(),
            ))
        }
        fn records(&self, _: u64) -> Result<Vec<LedgerRecord>, workflow_core::ledger::LedgerError> {
            Ok(vec![])
        }
        fn runs(&self) -> Result<Vec<u64>, workflow_core::ledger::LedgerError> {
            Ok(vec![])
        }
        fn head(
            &self,
            _: u64,
        ) -> Result<Option<(u32, String)>, workflow_core::ledger::LedgerError> {
            Ok(None)
        }
    }
    let wf = flow::Workflow::new((), ()).with_ledger(Arc::new(Full));
    let aborted = wf.run(1).await.unwrap_err();
    assert_eq!(
        aborted.error,
        RunError::Ledger(LedgerError::Storage("disk full".into()))
    );
    assert_eq!(
        aborted.transcript.len(),
        1,
        "the planner never handed anything on"
    );
}

/// The content of a run's records, without times and hashes.
fn content(records: &[LedgerRecord]) -> Vec<(u32, u32, String, String, String, Receipt)> {
    records
        .iter()
        .map(|r| {
            (
                r.seq,
                r.hop,
                r.from.to_string(),
                r.to.to_string(),
                r.payload.clone(),
                r.receipt.clone(),
            )
        })
        .collect()
}

/// A run stopped after any number of turns (the process died: its session
/// is gone) is resumed from the ledger and ends with exactly the records of
/// a run that was never stopped.
#[tokio::test]
async fn a_run_stopped_after_any_turn_resumes_to_the_same_records() {
    let ledger = Arc::new(MemoryLedger::new());
    let wf = flow::Workflow::new((), ()).with_ledger(ledger.clone());
    let clean = wf.run(3).await.expect("completes").transcript.run_id();
    let expected = content(&ledger.records(clean).unwrap());

    for turns in 1..=5 {
        let mut session = wf.start(3);
        for _ in 0..turns {
            session.step().await.expect("a turn");
        }
        let run_id = session.transcript().run_id();
        drop(session); // the crash: nothing after the last commit survives
        let done = wf.resume(run_id).await.expect("resumes");
        assert_eq!(done.output.0, 0);
        let records = ledger.records(run_id).unwrap();
        assert_eq!(content(&records), expected, "stopped after {turns} turns");
        assert_eq!(ledger.verify_run(run_id), Ok(()));
    }
}

#[tokio::test]
async fn resuming_an_ended_run_gives_its_recorded_end() {
    let ledger = Arc::new(MemoryLedger::new());
    let wf = flow::Workflow::new((), ()).with_ledger(ledger.clone());
    let done = wf.run(2).await.expect("completes");
    let again = wf
        .resume(done.transcript.run_id())
        .await
        .expect("already ended");
    assert_eq!(again.output.0, 0);
    assert_eq!(again.transcript.len(), done.transcript.len());

    let aborted = wf.run(150).await.expect_err("rejected");
    let again = wf
        .resume(aborted.transcript.run_id())
        .await
        .expect_err("still rejected");
    assert_eq!(again.error, aborted.error);
}

#[tokio::test]
async fn a_run_that_does_not_verify_is_not_resumed() {
    let ledger = Arc::new(MemoryLedger::new());
    let wf = flow::Workflow::new((), ()).with_ledger(ledger.clone());
    let run_id = wf.run(2).await.expect("completes").transcript.run_id();
    let mut records = ledger.records(run_id).unwrap();
    records[1].hop += 1;
    ledger.replace(run_id, records);
    let error = wf.resume(run_id).await.expect_err("tampered").error;
    assert!(
        matches!(&error, RunError::Resume(m) if m.contains("record #1 was edited")),
        "{error:?}"
    );

    let no_ledger = flow::Workflow::new((), ());
    let error = no_ledger.resume(run_id).await.expect_err("no ledger").error;
    assert!(matches!(error, RunError::Resume(_)));
}
