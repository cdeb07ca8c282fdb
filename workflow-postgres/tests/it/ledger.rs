//! The ledger's behaviours on a real server, as the SQLite ledger's tests
//! check them: full runs recorded and verified, duplicates refused,
//! tampering found, and a cut run resumed with its journaled tool calls
//! served instead of made again.

use std::sync::Arc;
use std::time::Duration;

use examples::deploy_workflow::{FakeCloud, deploy, staging_goal, staging_root};
use examples::payment::{Provider, order, payment};
use workflow_core::ledger::{
    JournalEntry, Ledger, LedgerError, LedgerRecord, Tampering, VerifyError,
};
use workflow_core::tool::{ToolCallRecord, ToolOutcome};
use workflow_postgres::PostgresLedger;

use crate::cluster::cluster_or_skip;

/// Both runs of the main example, on a current-thread and on a
/// multi-thread runtime, committed, read back by a new connection and
/// verified.
#[test]
fn both_runs_of_the_main_example_are_committed_and_verify_after_reconnecting() {
    let cluster = cluster_or_skip!();
    let url = cluster.database("main_example");
    let mut expected = Vec::new();
    for runtime in [
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap(),
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap(),
    ] {
        let ledger = Arc::new(PostgresLedger::connect(&url).expect("connects"));
        runtime.block_on(async {
            let incident = deploy::Workflow::new(staging_root(), FakeCloud::incident())
                .with_ledger(ledger.clone());
            let aborted = incident
                .run(staging_goal())
                .await
                .expect_err("the incident is stopped");
            let clean = deploy::Workflow::new(staging_root(), FakeCloud::one_page())
                .with_ledger(ledger.clone());
            let done = clean
                .run(staging_goal())
                .await
                .expect("the clean run completes");
            expected.push((aborted.transcript.run_id(), aborted.transcript.len()));
            expected.push((done.transcript.run_id(), done.transcript.len()));
        });
    }

    // A new connection, as another process would open it, from plain
    // synchronous code (as the CLI reads).
    let reopened = PostgresLedger::connect(&url).expect("reconnects");
    let mut runs: Vec<u64> = expected.iter().map(|(run, _)| *run).collect();
    runs.sort_unstable();
    assert_eq!(reopened.runs().expect("lists runs"), runs);
    for (run, len) in expected {
        let records = reopened.records(run).expect("reads");
        assert_eq!(records.len(), len);
        assert_eq!(
            reopened.head(run).unwrap(),
            Some((len as u32 - 1, records[len - 1].hash.clone()))
        );
        reopened.verify_run(run).expect("verifies");
    }
}

fn one_run(url: &str) -> (PostgresLedger, u64, Vec<LedgerRecord>) {
    let ledger = Arc::new(PostgresLedger::connect(url).expect("connects"));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let run = runtime.block_on(async {
        deploy::Workflow::new(staging_root(), FakeCloud::one_page())
            .with_ledger(ledger.clone())
            .run(staging_goal())
            .await
            .expect("completes")
            .transcript
            .run_id()
    });
    let records = ledger.records(run).unwrap();
    let ledger = Arc::into_inner(ledger).expect("the workflow is gone");
    (ledger, run, records)
}

#[test]
fn a_second_record_at_the_same_place_is_refused_and_changes_nothing() {
    let cluster = cluster_or_skip!();
    let url = cluster.database("duplicate");
    let (ledger, run, records) = one_run(&url);
    let head = ledger.head(run).unwrap();
    let mut again = records[1].clone();
    again.hop += 7;
    again.hash = again.compute_hash();
    assert_eq!(
        ledger.append(&again),
        Err(LedgerError::Duplicate {
            run_id: run,
            seq: 1
        })
    );
    // The refused append is rolled back whole: records and head as before.
    assert_eq!(ledger.records(run).unwrap(), records);
    assert_eq!(ledger.head(run).unwrap(), head);
    ledger.verify_run(run).expect("verifies");
}

#[test]
fn edited_removed_and_cut_records_in_the_database_are_found() {
    let cluster = cluster_or_skip!();
    let url = cluster.database("tamper");
    let (ledger, run, records) = one_run(&url);
    let last = records.len() - 1;
    let id = run as i64;

    // Someone edits the stored JSON of record #2.
    cluster.sql(
        "tamper",
        &format!(
            "UPDATE workflow_records SET record = replace(record, '\"hop\":2', '\"hop\":1')
             WHERE run_id = {id} AND seq = 2"
        ),
    );
    assert_ne!(ledger.records(run).unwrap()[2], records[2], "edited");
    assert!(
        matches!(
            ledger.verify_run(run),
            Err(VerifyError::Tampered(Tampering::Edited { seq: 2, .. }))
        ),
        "{:?}",
        ledger.verify_run(run)
    );

    // A record that no longer reads as one is corruption, not a panic.
    cluster.sql(
        "tamper",
        &format!("UPDATE workflow_records SET record = '{{' WHERE run_id = {id} AND seq = 2"),
    );
    assert!(matches!(
        ledger.records(run),
        Err(LedgerError::CorruptRecord { seq: 2, .. })
    ));
    // A key given twice in a stored record is refused, not read with the
    // last value (as on SQLite).
    cluster.sql(
        "tamper",
        &format!(
            "UPDATE workflow_records SET record = '{}' WHERE run_id = {id} AND seq = 2",
            serde_json::to_string(&records[2])
                .unwrap()
                .replacen("{", "{\"hop\":0,", 1)
                .replace('\'', "''")
        ),
    );
    let twice = ledger.records(run);
    assert!(
        matches!(&twice, Err(LedgerError::CorruptRecord { seq: 2, why, .. }) if why.contains("twice")),
        "{twice:?}"
    );

    // The last record removed: the head, kept apart, says it is missing.
    cluster.sql(
        "tamper",
        &format!(
            "UPDATE workflow_records SET record = '{}' WHERE run_id = {id} AND seq = 2;
             DELETE FROM workflow_records WHERE run_id = {id} AND seq = {last}",
            serde_json::to_string(&records[2])
                .unwrap()
                .replace('\'', "''")
        ),
    );
    let found = ledger.verify_run(run);
    assert!(
        matches!(found, Err(VerifyError::Tampered(_))),
        "a cut tail is found: {found:?}"
    );
}

#[test]
fn the_tool_call_journal_keeps_the_latest_call_per_place() {
    let cluster = cluster_or_skip!();
    let url = cluster.database("journal");
    let ledger = PostgresLedger::connect(&url).expect("connects");
    let call = |index: u32, result: &str| {
        let call = ToolCallRecord {
            tool: "charge".into(),
            index,
            arguments: "{}".into(),
            outcome: ToolOutcome::Ok {
                result: result.into(),
                digest: String::new(),
            },
            attempts: 1,
            duration_us: 5,
            audit: None,
        };
        JournalEntry::bind(1, 4, "", call)
    };
    let big = u64::MAX - 3;
    ledger.append_tool_call(big, 4, &call(1, "b")).unwrap();
    ledger.append_tool_call(big, 4, &call(0, "a")).unwrap();
    ledger.append_tool_call(big, 4, &call(1, "c")).unwrap();
    ledger
        .append_tool_call(big, 5, &call(0, "other turn"))
        .unwrap();
    assert_eq!(
        ledger.tool_calls(big, 4).unwrap(),
        [call(0, "a"), call(1, "c")]
    );
    assert_eq!(ledger.tool_calls(big, 6).unwrap(), []);
    assert_eq!(ledger.tool_calls(1, 4).unwrap(), []);
}

/// A payment cut while it waits on the receipt mail (the process died after
/// the charge was journaled) resumes on PostgreSQL: the charge is served
/// from the journal, not requested again, and the run ends with the records
/// of a run that was never cut.
#[tokio::test(flavor = "current_thread")]
async fn a_cut_payment_resumes_with_its_journaled_charge_served() {
    let cluster = cluster_or_skip!();
    let url = cluster.database("resume");
    let ledger: Arc<dyn Ledger> = Arc::new(PostgresLedger::connect(&url).expect("connects"));
    let dir = cluster.dir().join("effects");
    std::fs::create_dir_all(&dir).unwrap();
    let provider = |mail_delay| Provider {
        requests: dir.join("requests.log"),
        charges: dir.join("charges.log"),
        mail_delay,
    };
    let shape = |records: &[LedgerRecord]| -> Vec<String> {
        records
            .iter()
            .map(|r| {
                let tools: Vec<&str> = r
                    .turn
                    .iter()
                    .flat_map(|t| &t.tool_calls)
                    .map(|c| c.tool.as_ref())
                    .collect();
                format!(
                    "#{} {} -> {} {:?} {tools:?}",
                    r.seq, r.from, r.to, r.receipt
                )
            })
            .collect()
    };

    let clean = payment::Workflow::new((), provider(Duration::ZERO)).with_ledger(ledger.clone());
    let clean_run = clean
        .run(order())
        .await
        .expect("completes")
        .transcript
        .run_id();
    let expected = shape(&ledger.records(clean_run).unwrap());
    std::fs::remove_file(dir.join("requests.log")).unwrap();

    let cut =
        payment::Workflow::new((), provider(Duration::from_secs(3600))).with_ledger(ledger.clone());
    let mut session = Box::pin(cut.run(order()));
    // Until the charge is journaled, then the run is dropped: the crash.
    let run = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            tokio::select! {
                _ = &mut session => panic!("the mail never comes"),
                _ = tokio::time::sleep(Duration::from_millis(20)) => {}
            }
            let runs = ledger.runs().unwrap();
            if let Some(&run) = runs.iter().find(|&&r| r != clean_run)
                && !ledger.tool_calls(run, 2).unwrap().is_empty()
            {
                break run;
            }
        }
    })
    .await
    .expect("the charge is journaled");
    drop(session); // the run itself is dropped, as a crash would cut it
    let requested = || std::fs::read_to_string(dir.join("requests.log")).unwrap_or_default();
    assert_eq!(requested().lines().count(), 1, "charged once");

    let resumed = payment::Workflow::new((), provider(Duration::ZERO)).with_ledger(ledger.clone());
    let done = resumed.resume(run).await.expect("resumes");
    assert_eq!(done.transcript.run_id(), run);
    assert_eq!(
        requested().lines().count(),
        1,
        "the charge was served, not made again"
    );
    assert_eq!(shape(&ledger.records(run).unwrap()), expected);
    ledger.verify_run(run).expect("verifies");
}

/// A run suspended for a person (the drifted VPC breaks `env_pinned` at
/// terraform's receipt) waits in the database; another executor, on its
/// own connection as another process would be, finds the suspension there,
/// and the person's edit carries the run to its end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suspended_run_waits_in_the_database_and_a_decision_from_elsewhere_completes_it() {
    let cluster = cluster_or_skip!();
    let url = cluster.database("suspended");
    let first = Arc::new(PostgresLedger::connect(&url).expect("connects"));
    let escalated = deploy::Workflow::new(staging_root(), FakeCloud::drifted())
        .with_ledger(first.clone())
        .run(staging_goal())
        .await
        .expect_err("suspended")
        .transcript
        .run_id();
    drop(first);

    let other = Arc::new(PostgresLedger::connect(&url).expect("connects"));
    let decider =
        deploy::Workflow::new(staging_root(), FakeCloud::drifted()).with_ledger(other.clone());
    let suspension = decider
        .suspension(escalated)
        .expect("waits in the database");
    let mut plan: serde_json::Value =
        serde_json::from_str(&suspension.payload_json().unwrap()).unwrap();
    plan["vpc_id"] = "vpc-2stag".into();
    plan["vpc_env"] = "staging".into();
    decider
        .decide(
            &suspension,
            workflow_core::Decision::Edit {
                by: "ops@acme".into(),
                payload: plan,
            },
        )
        .await
        .expect("completes after the edit");
    let records = other.records(escalated).unwrap();
    assert!(
        records.iter().any(|r| matches!(
            r.receipt,
            workflow_core::Receipt::Approved { edited: true, .. }
        )),
        "the person's edit is recorded"
    );
    other.verify_run(escalated).expect("verifies");
    assert!(
        decider.suspension(escalated).is_err(),
        "no longer waiting for a decision"
    );
}

/// An operator's revocations are kept by run, in order, read back by a new
/// connection (another process), and a run's revocations are its own.
#[test]
fn revocations_are_kept_by_run_in_order_and_read_back_after_reconnecting() {
    use workflow_core::{LeaseId, StoredRevocation};
    let cluster = cluster_or_skip!();
    let url = cluster.database("revocations");
    let ledger = PostgresLedger::connect(&url).expect("connects");
    let kept = |run_id, seq, after| StoredRevocation {
        lease: LeaseId { run_id, seq },
        by: "ops".into(),
        after,
        at_unix_ms: 1_700_000_000_000,
    };
    for r in [kept(7, 1, Some(0)), kept(8, 2, None), kept(7, 3, Some(2))] {
        ledger.append_revocation(&r).expect("kept");
    }
    let reopened = PostgresLedger::connect(&url).expect("reconnects");
    assert_eq!(
        reopened.revocations(7).unwrap(),
        vec![kept(7, 1, Some(0)), kept(7, 3, Some(2))]
    );
    assert_eq!(reopened.revocations(8).unwrap(), vec![kept(8, 2, None)]);
    assert_eq!(reopened.revocations(9).unwrap(), vec![]);
}
