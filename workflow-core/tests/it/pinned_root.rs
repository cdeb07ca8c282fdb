//! The run's header: the root invariants a run is pinned to are recorded on
//! its first record, covered by the hash chain; resume refuses another root,
//! replay reports it; runs recorded before roots were recorded still resume.

use std::sync::Arc;

use workflow_core::Endpoint;
use workflow_core::ledger::{GENESIS, Ledger, LedgerRecord, MemoryLedger, Tampering, VerifyError};
use workflow_core::prelude::*;
use workflow_core::{Difference, RunError};

use crate::pins::desk;

const ACME: &str = r#"{"tenant":"acme"}"#;

fn desk_for(tenant: &str, ledger: &Arc<MemoryLedger>) -> desk::Workflow {
    let root = desk::Root {
        tenant: tenant.into(),
    };
    desk::Workflow::new(root, ()).with_ledger(ledger.clone())
}

/// A run of `acme` cut after its first step (it has not reached its end):
/// its id.
async fn cut_run(ledger: &Arc<MemoryLedger>) -> u64 {
    let wf = desk_for("acme", ledger);
    let mut session = wf.start("acme".to_owned());
    session.step().await.expect("intake's turn");
    let run_id = session.transcript().run_id();
    drop(session); // the crash
    let records = ledger.records(run_id).unwrap();
    assert!(records.last().is_some_and(|r| r.to != Endpoint::End));
    run_id
}

/// `records` chained again from the start, as a ledger would have stored
/// them (to make a run look as an older version wrote it).
fn rechained(mut records: Vec<LedgerRecord>) -> Vec<LedgerRecord> {
    let mut prev = GENESIS.to_owned();
    for r in &mut records {
        r.prev_hash = prev;
        r.hash = r.compute_hash();
        prev = r.hash.clone();
    }
    records
}

#[tokio::test]
async fn a_run_records_its_pinned_root_on_its_first_record_only() {
    let ledger = Arc::new(MemoryLedger::new());
    let done = desk_for("acme", &ledger)
        .run("acme".to_owned())
        .await
        .expect("completes");
    let run_id = done.transcript.run_id();
    assert_eq!(done.transcript.root(), Some(ACME));
    let records = ledger.records(run_id).unwrap();
    assert_eq!(records[0].root.as_deref(), Some(ACME));
    assert!(records[1..].iter().all(|r| r.root.is_none()));
    assert_eq!(ledger.verify_run(run_id), Ok(()));
}

#[tokio::test]
async fn a_run_pinned_to_nothing_records_no_root_and_hashes_as_before() {
    let ledger = Arc::new(MemoryLedger::new());
    let wf = crate::ledger::flow::Workflow::new((), ()).with_ledger(ledger.clone());
    let run_id = wf.run(2).await.expect("completes").transcript.run_id();
    let records = ledger.records(run_id).unwrap();
    assert!(records.iter().all(|r| r.root.is_none()));
    // Without a root the record is what it always was: its JSON has no
    // `root` key.
    let json = serde_json::to_string(&records[0]).unwrap();
    assert!(!json.contains("\"root\""), "{json}");
}

#[tokio::test]
async fn editing_the_recorded_root_breaks_the_chain() {
    let ledger = Arc::new(MemoryLedger::new());
    let run_id = desk_for("acme", &ledger)
        .run("acme".to_owned())
        .await
        .expect("completes")
        .transcript
        .run_id();
    let original = ledger.records(run_id).unwrap();
    let edited_to = |root: Option<&str>| {
        let mut records = original.clone();
        records[0].root = root.map(str::to_owned);
        records
    };
    for records in [
        edited_to(Some(r#"{"tenant":"globex"}"#)),
        edited_to(None),
        edited_to(Some(r#"{"tenant": "acme"}"#)),
    ] {
        ledger.replace(run_id, records.clone());
        assert_eq!(
            ledger.verify_run(run_id),
            Err(VerifyError::Tampered(Tampering::Edited { seq: 0 })),
            "{:?}",
            records[0].root
        );
    }
    ledger.replace(run_id, original);
    assert_eq!(ledger.verify_run(run_id), Ok(()));
}

#[tokio::test]
async fn resuming_under_another_root_is_refused_naming_both() {
    let ledger = Arc::new(MemoryLedger::new());
    let run_id = cut_run(&ledger).await;
    let cut = ledger.records(run_id).unwrap();
    let aborted = desk_for("globex", &ledger)
        .resume(run_id)
        .await
        .expect_err("another root");
    assert_eq!(
        aborted.error,
        RunError::RootDiffers {
            run_id,
            recorded: ACME.to_owned(),
            held: r#"{"tenant":"globex"}"#.to_owned(),
        }
    );
    let message = aborted.error.to_string();
    assert!(
        message.contains("acme") && message.contains("globex"),
        "{message}"
    );
    // Nothing ran, nothing was recorded.
    assert_eq!(ledger.records(run_id).unwrap(), cut);

    // Under the recorded root the run carries on to its end.
    let done = desk_for("acme", &ledger)
        .resume(run_id)
        .await
        .expect("the recorded root");
    assert_eq!(done.output, "acme");
    assert_eq!(done.transcript.root(), Some(ACME));
    assert_eq!(ledger.records(run_id).unwrap().len(), 3);
    assert_eq!(ledger.records(run_id).unwrap()[0], cut[0]);
    assert_eq!(ledger.verify_run(run_id), Ok(()));
}

#[tokio::test]
async fn a_run_recorded_without_a_root_still_resumes() {
    let written = Arc::new(MemoryLedger::new());
    let run_id = cut_run(&written).await;
    // The same run as a ledger written before roots were recorded holds it.
    let mut records = written.records(run_id).unwrap();
    records[0].root = None;
    let old = Arc::new(MemoryLedger::new());
    for r in rechained(records) {
        old.append(&r).unwrap();
    }
    assert_eq!(old.verify_run(run_id), Ok(()));

    let done = desk_for("acme", &old)
        .resume(run_id)
        .await
        .expect("an old run resumes");
    assert_eq!(done.output, "acme");
    let records = old.records(run_id).unwrap();
    assert_eq!(records.len(), 3);
    assert!(records.iter().all(|r| r.root.is_none()));
    assert_eq!(old.verify_run(run_id), Ok(()));
}

#[tokio::test]
async fn replaying_under_another_root_reports_a_root_divergence() {
    let ledger = Arc::new(MemoryLedger::new());
    let run_id = desk_for("acme", &ledger)
        .run("acme".to_owned())
        .await
        .expect("completes")
        .transcript
        .run_id();
    let records = ledger.records(run_id).unwrap();

    let same = desk_for("acme", &ledger).replay(&records).await.unwrap();
    assert_eq!(same.divergence, None);

    let other = desk_for("globex", &ledger).replay(&records).await.unwrap();
    let divergence = other.divergence.expect("the root differs");
    assert_eq!(divergence.seq, 0);
    assert_eq!(divergence.difference, Difference::Root);
    assert_eq!(divergence.recorded.as_deref(), Some(ACME));
    assert_eq!(
        divergence.replayed.as_deref(),
        Some(r#"{"tenant":"globex"}"#)
    );

    // A recording without a root has nothing to compare it with.
    let mut old = records.clone();
    old[0].root = None;
    let old = rechained(old);
    let report = desk_for("acme", &ledger).replay(&old).await.unwrap();
    assert_eq!(report.divergence, None);
}

/// Root invariants JSON cannot hold: a map whose keys are not strings.
#[workflow(entry = only, output = u32)]
pub mod unrecordable {
    use workflow_core::prelude::*;

    /// Limits by (region, zone): not a JSON object's keys.
    #[invariants]
    pub struct Root {
        /// The limits.
        pub limits: std::collections::BTreeMap<(u8, u8), u32>,
    }

    #[agent(to = [END])]
    async fn only(n: u32, _cx: only::Context<'_>) -> Result<only::Next, Reject> {
        Ok(only::Next::End(n))
    }
}

#[tokio::test]
async fn a_root_that_does_not_serialize_stops_the_run_before_its_first_record() {
    let ledger = Arc::new(MemoryLedger::new());
    let root = unrecordable::Root {
        limits: [((1, 2), 3)].into(),
    };
    let aborted = unrecordable::Workflow::new(root, ())
        .with_ledger(ledger.clone())
        .run(7)
        .await
        .expect_err("the root cannot be recorded");
    assert!(
        matches!(&aborted.error, RunError::RootUnrecordable(why) if why.contains("key must be a string")),
        "{:?}",
        aborted.error
    );
    assert_eq!(
        ledger.runs().unwrap(),
        Vec::<u64>::new(),
        "nothing recorded"
    );
}
