//! The tool-call journal is checked before it is served and by `verify`:
//! an entry whose result was edited, that was moved from another run or
//! turn, removed or reordered, or that is not the call its turn's record
//! holds, is refused with an error naming the run, the turn and the call.
//! (The same against an SQLite file: `examples/tests/it/journal_tamper.rs`.)

use std::sync::Arc;
use std::sync::atomic::Ordering;

use workflow_core::RunError;
use workflow_core::ledger::{
    JournalEntry, JournalProblem, JournalTampering, Ledger, MemoryLedger, Tampering, VerifyError,
};
use workflow_core::tool::ToolOutcome;

use crate::resumed_tool_calls::{Provider, crashed_run, order, payment};

/// The hash of the record the turn producing transfer #2 works on.
fn anchor(ledger: &MemoryLedger, run: u64) -> String {
    ledger.records(run).unwrap()[1].hash.clone()
}

/// The journaled charge of the cut turn, with its result replaced by
/// another charge id (`rehash`: its digest taken again, as someone who
/// knows the format would).
fn forged(ledger: &MemoryLedger, run: u64, rehash: bool) -> JournalEntry {
    let mut entry = ledger.tool_calls(run, 2).unwrap().remove(0);
    let ToolOutcome::Ok { result, digest } = &mut entry.call.outcome else {
        panic!("the charge succeeded");
    };
    *result = result.replace("ch_acme_40_1", "ch_evil_99_9");
    if rehash {
        *digest = sha256(result);
    }
    entry
}

fn sha256(text: &str) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(text.as_bytes()))
}

/// Resumes `run` and expects the journal's refusal, nothing charged or
/// recorded: the error.
async fn refused(ledger: Arc<MemoryLedger>, run: u64) -> JournalTampering {
    let before = ledger.records(run).unwrap();
    let wf = payment::Workflow::new((), Provider::new(false)).with_ledger(ledger.clone());
    let aborted = wf
        .resume(run)
        .await
        .expect_err("the forged journal is refused");
    assert_eq!(
        wf.deps().charges.load(Ordering::SeqCst),
        0,
        "nothing charged"
    );
    assert_eq!(wf.deps().mails.load(Ordering::SeqCst), 0, "no turn ran");
    assert_eq!(ledger.records(run).unwrap(), before, "nothing recorded");
    match aborted.error {
        RunError::Journal(tampering) => tampering,
        other => panic!("not the journal's refusal: {other:?}"),
    }
}

#[tokio::test]
async fn a_journaled_result_edited_is_refused_on_resume_and_by_verify() {
    let ledger = Arc::new(MemoryLedger::new());
    let run = crashed_run(ledger.clone()).await;
    let entry = forged(&ledger, run, false);
    ledger.append_tool_call(run, 2, &entry).unwrap();
    let expected = JournalTampering {
        run_id: run,
        turn_seq: 2,
        index: 0,
        problem: JournalProblem::Digest,
    };
    assert_eq!(
        ledger.verify_run(run),
        Err(VerifyError::Tampered(Tampering::Journal(expected.clone())))
    );
    let tampering = refused(ledger, run).await;
    assert_eq!(tampering, expected);
    assert!(
        tampering
            .to_string()
            .starts_with(&format!("run {run}, turn #2, tool call 0: ")),
        "{tampering}"
    );
}

#[tokio::test]
async fn an_edited_result_with_its_digest_taken_again_is_refused() {
    let ledger = Arc::new(MemoryLedger::new());
    let run = crashed_run(ledger.clone()).await;
    ledger
        .append_tool_call(run, 2, &forged(&ledger, run, true))
        .unwrap();
    assert_eq!(refused(ledger, run).await.problem, JournalProblem::Unbound);
}

#[tokio::test]
async fn an_entry_moved_from_another_run_is_refused() {
    let ledger = Arc::new(MemoryLedger::new());
    let first = crashed_run(ledger.clone()).await;
    let second = {
        // A second cut run in the same ledger.
        let wf = payment::Workflow::new((), Provider::new(true)).with_ledger(ledger.clone());
        let cut = tokio::time::timeout(std::time::Duration::from_millis(50), wf.run(order())).await;
        assert!(cut.is_err());
        *ledger
            .runs()
            .unwrap()
            .iter()
            .find(|r| **r != first)
            .unwrap()
    };
    // The first run's charge, valid where it was journaled, put in the
    // second run's journal.
    let entry = ledger.tool_calls(first, 2).unwrap().remove(0);
    assert_eq!(
        entry.call.tool,
        ledger.tool_calls(second, 2).unwrap()[0].call.tool
    );
    assert_eq!(entry.call.index, 0);
    ledger.append_tool_call(second, 2, &entry).unwrap();
    let tampering = refused(ledger, second).await;
    assert_eq!(
        (tampering.run_id, tampering.problem),
        (second, JournalProblem::Unbound)
    );
}

#[tokio::test]
async fn a_removed_or_reordered_entry_is_refused() {
    let ledger = Arc::new(MemoryLedger::new());
    let run = crashed_run(ledger.clone()).await;
    // Call 0 journaled as if it were call 1 (bound there, so only its
    // place is wrong): call 0 is missing, call 1 stands first.
    let mut call = ledger.tool_calls(run, 2).unwrap().remove(0).call;
    call.index = 1;
    let moved = JournalEntry::bind(run, 2, &anchor(&ledger, run), call);
    let fresh = Arc::new(MemoryLedger::new());
    for r in ledger.records(run).unwrap() {
        fresh.append(&r).unwrap();
    }
    fresh.append_tool_call(run, 2, &moved).unwrap();
    assert_eq!(
        refused(fresh, run).await.problem,
        JournalProblem::OutOfPlace { found: 1 }
    );
}

#[tokio::test]
async fn a_completed_turn_s_journal_is_checked_against_its_record() {
    let ledger = Arc::new(MemoryLedger::new());
    let wf = payment::Workflow::new((), Provider::new(false)).with_ledger(ledger.clone());
    let run = wf
        .run(order())
        .await
        .expect("completes")
        .transcript
        .run_id();
    ledger.verify_run(run).expect("verifies");
    // An entry forged with its digest and binding taken again: only the
    // record (in the hash chain) tells it from the call made.
    let mut entry = forged(&ledger, run, true);
    entry = JournalEntry::bind(run, 2, &anchor(&ledger, run), entry.call);
    ledger.append_tool_call(run, 2, &entry).unwrap();
    assert_eq!(
        ledger.verify_run(run),
        Err(VerifyError::Tampered(Tampering::Journal(
            JournalTampering {
                run_id: run,
                turn_seq: 2,
                index: 0,
                problem: JournalProblem::NotAsRecorded,
            }
        )))
    );
}

#[tokio::test]
async fn a_tool_call_whose_result_does_not_match_its_digest_fails_verify_in_a_record() {
    // A record written by a version that served an edited journal entry:
    // the chain holds a result that is not the one its digest was taken of.
    let ledger = Arc::new(MemoryLedger::new());
    let wf = payment::Workflow::new((), Provider::new(false)).with_ledger(ledger.clone());
    let run = wf
        .run(order())
        .await
        .expect("completes")
        .transcript
        .run_id();
    let mut records = ledger.records(run).unwrap();
    let turn = records[2].turn.as_mut().expect("the cashier's turn");
    let ToolOutcome::Ok { result, .. } = &mut turn.tool_calls[0].outcome else {
        panic!("charged");
    };
    *result = result.replace("ch_acme_40_1", "ch_evil_99_9");
    // Re-hashed from there on, so that the chain itself holds.
    let mut prev = records[1].hash.clone();
    for r in &mut records[2..] {
        r.prev_hash = prev;
        r.hash = r.compute_hash();
        prev = r.hash.clone();
    }
    let fresh = MemoryLedger::new();
    for r in &records {
        fresh.append(r).unwrap();
    }
    assert_eq!(
        fresh.verify_run(run),
        Err(VerifyError::Tampered(Tampering::Journal(
            JournalTampering {
                run_id: run,
                turn_seq: 2,
                index: 0,
                problem: JournalProblem::Digest,
            }
        )))
    );
}
