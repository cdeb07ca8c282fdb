//! The main example's runs, committed to an SQLite ledger file: read back by
//! a fresh connection, verified, and any tampering found.

use std::sync::Arc;

use examples::deploy_workflow::{FakeCloud, deploy, staging_goal, staging_root};
use workflow_core::ledger::{Ledger, SqliteLedger, Tampering, VerifyError};

use crate::fixtures::scratch;

#[tokio::test]
async fn both_runs_of_the_main_example_are_committed_and_verify_after_reopening() {
    let dir = scratch("ledger-main");
    let path = dir.join("runs.db");
    let ledger = Arc::new(SqliteLedger::open(&path).expect("opens"));
    let incident =
        deploy::Workflow::new(staging_root(), FakeCloud::incident()).with_ledger(ledger.clone());
    let aborted = incident
        .run(staging_goal())
        .await
        .expect_err("the incident is stopped");
    let clean =
        deploy::Workflow::new(staging_root(), FakeCloud::one_page()).with_ledger(ledger.clone());
    let done = clean
        .run(staging_goal())
        .await
        .expect("the clean run completes");
    drop((incident, clean, ledger));

    // A new connection, as another process would open it.
    let reopened = SqliteLedger::open(&path).expect("reopens");
    let runs = reopened.runs().expect("lists runs");
    assert_eq!(runs.len(), 2);
    for (run, len) in [
        (aborted.transcript.run_id(), aborted.transcript.len()),
        (done.transcript.run_id(), done.transcript.len()),
    ] {
        let records = reopened.records(run).expect("reads");
        assert_eq!(records.len(), len);
        assert_eq!(reopened.verify_run(run), Ok(()));
    }
    let rejected = reopened.records(aborted.transcript.run_id()).unwrap();
    // The incident stops when the lookup tool fails fast: the failed turn
    // is recorded, with the failing call.
    let last = rejected.last().unwrap();
    assert!(
        matches!(&last.receipt, workflow_core::Receipt::TurnFailed { error } if error.contains("partial result")),
        "{last}"
    );
    let turn = last
        .turn
        .as_ref()
        .expect("the failed turn's calls are recorded");
    assert_eq!(turn.tool_calls[0].tool, "describe_vpcs");
}

#[tokio::test]
async fn an_edited_record_in_the_file_is_found() {
    let dir = scratch("ledger-edit");
    let path = dir.join("runs.db");
    let ledger = Arc::new(SqliteLedger::open(&path).expect("opens"));
    let wf =
        deploy::Workflow::new(staging_root(), FakeCloud::one_page()).with_ledger(ledger.clone());
    let run = wf
        .run(staging_goal())
        .await
        .expect("completes")
        .transcript
        .run_id();

    // Someone edits the stored JSON of record #2 (the terraform plan's hop).
    let conn = rusqlite::Connection::open(&path).expect("opens the file");
    let json: String = conn
        .query_row(
            "SELECT record FROM records WHERE run_id = ?1 AND seq = 2",
            [run as i64],
            |row| row.get(0),
        )
        .expect("record #2 is there");
    let edited = json.replacen("\"hop\":2", "\"hop\":1", 1);
    assert_ne!(edited, json);
    conn.execute(
        "UPDATE records SET record = ?1 WHERE run_id = ?2 AND seq = 2",
        rusqlite::params![edited, run as i64],
    )
    .expect("updates");
    assert_eq!(
        ledger.verify_run(run),
        Err(VerifyError::Tampered(Tampering::Edited { seq: 2 }))
    );

    // Someone deletes the last record: the head finds the cut.
    conn.execute(
        "UPDATE records SET record = ?1 WHERE run_id = ?2 AND seq = 2",
        rusqlite::params![json, run as i64],
    )
    .expect("restores");
    conn.execute(
        "DELETE FROM records WHERE run_id = ?1 AND seq = 3",
        [run as i64],
    )
    .expect("deletes");
    assert!(matches!(
        ledger.verify_run(run),
        Err(VerifyError::Tampered(Tampering::Truncated {
            last: 2,
            head: 3
        }))
    ));
}

#[tokio::test]
async fn a_last_record_filed_under_another_sequence_number_is_found_when_read() {
    let dir = scratch("ledger-seq");
    let path = dir.join("runs.db");
    let ledger = Arc::new(SqliteLedger::open(&path).expect("opens"));
    let wf =
        deploy::Workflow::new(staging_root(), FakeCloud::one_page()).with_ledger(ledger.clone());
    let done = wf.run(staging_goal()).await.expect("completes");
    let (run, last) = (done.transcript.run_id(), done.transcript.len() as i64 - 1);
    // The row's key moves; the record's content (and so its hash) stays.
    let conn = rusqlite::Connection::open(&path).expect("opens the file");
    conn.execute(
        "UPDATE records SET seq = ?1 WHERE run_id = ?2 AND seq = ?3",
        rusqlite::params![last + 7, run as i64, last],
    )
    .expect("updates");
    let error = ledger.records(run).expect_err("the moved row is refused");
    assert!(
        error
            .to_string()
            .contains(&format!("stored as #{} but carries #{last}", last + 7)),
        "{error}"
    );
    assert!(ledger.verify_run(run).is_err());
}

#[test]
fn a_duplicate_record_is_refused() {
    let ledger = SqliteLedger::in_memory().expect("opens");
    let record = workflow_core::ledger::LedgerRecord {
        workflow: "w".into(),
        run_id: 7,
        seq: 0,
        hop: 0,
        from: workflow_core::Endpoint::Start,
        to: workflow_core::Endpoint::End,
        payload_type: "u32".into(),
        payload_format: workflow_core::ledger::PayloadFormat::Json,
        payload: hex_of("1"),
        receipt: workflow_core::Receipt::Accepted,
        at_us: 0,
        redelivery: false,
        turn: None,
        trace_id: String::new(),
        span_id: String::new(),
        root: None,
        sender_scope: None,
        mode: Default::default(),
        lineage: None,
        prev_hash: workflow_core::ledger::GENESIS.into(),
        hash: String::new(),
    };
    ledger.append(&record).expect("the first is stored");
    assert_eq!(
        ledger.append(&record),
        Err(workflow_core::ledger::LedgerError::Duplicate { run_id: 7, seq: 0 })
    );
}

fn hex_of(text: &str) -> String {
    text.bytes().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test]
async fn a_cut_run_whose_last_record_was_moved_to_another_sequence_number_is_not_resumed() {
    let dir = scratch("ledger-moved");
    let path = dir.join("runs.db");
    let ledger = Arc::new(SqliteLedger::open(&path).expect("opens"));
    let wf =
        deploy::Workflow::new(staging_root(), FakeCloud::one_page()).with_ledger(ledger.clone());
    let run = wf
        .run(staging_goal())
        .await
        .expect("completes")
        .transcript
        .run_id();

    // Cut as a crash in the terraform agent's turn leaves it: no END
    // transfer, the head on #2.
    let conn = rusqlite::Connection::open(&path).expect("opens the file");
    conn.execute(
        "DELETE FROM records WHERE run_id = ?1 AND seq = 3",
        [run as i64],
    )
    .expect("deletes");
    conn.execute(
        "UPDATE heads SET seq = 2, hash = (SELECT json_extract(record, '$.hash') FROM records \
         WHERE run_id = ?1 AND seq = 2) WHERE run_id = ?1",
        [run as i64],
    )
    .expect("moves the head");
    assert_eq!(ledger.verify_run(run), Ok(()), "a cut run verifies");

    // Its last record's row moved from #2 to #9: content, chain and head
    // intact. It verified, and the resumed turn's #3 then sorted before it.
    conn.execute(
        "UPDATE records SET seq = 9 WHERE run_id = ?1 AND seq = 2",
        [run as i64],
    )
    .expect("moves the record");
    assert_eq!(
        ledger.verify_run(run),
        Err(VerifyError::Tampered(Tampering::Unreadable {
            seq: 9,
            why: "it is stored as #9 but carries #2".into()
        }))
    );
    let refused = wf.resume(run).await.expect_err("not resumed");
    assert!(
        refused
            .error
            .to_string()
            .contains("record #9 does not read"),
        "{}",
        refused.error
    );
    let stored: i64 = conn
        .query_row(
            "SELECT count(*) FROM records WHERE run_id = ?1",
            [run as i64],
            |row| row.get(0),
        )
        .expect("counts");
    assert_eq!(stored, 3, "nothing was appended");
}
