//! Signed checkpoints through the library (the command line and an SQLite
//! file: `workflow-cli/tests/it/checkpoint.rs`).

use std::sync::Arc;

use workflow_core::ledger::{
    Checkpoint, CheckpointError, CheckpointKey, CheckpointPublicKey, Finding, Ledger, MemoryLedger,
    SignedCheckpoint,
};

use crate::resumed_tool_calls::{Provider, order, payment};

async fn completed(ledger: Arc<MemoryLedger>) -> u64 {
    let wf = payment::Workflow::new((), Provider::new(false)).with_ledger(ledger);
    wf.run(order())
        .await
        .expect("completes")
        .transcript
        .run_id()
}

#[tokio::test]
async fn a_checkpoint_signs_every_head_and_reads_back_from_its_file() {
    let ledger = Arc::new(MemoryLedger::new());
    let a = completed(ledger.clone()).await;
    let b = completed(ledger.clone()).await;
    let checkpoint = Checkpoint::take(&*ledger).unwrap();
    let mut runs: Vec<u64> = checkpoint.heads.iter().map(|h| h.run_id).collect();
    runs.sort();
    let mut expected = vec![a, b];
    expected.sort();
    assert_eq!(runs, expected);
    assert_eq!(checkpoint.records, 6);

    let key = CheckpointKey::generate().unwrap();
    let signed = checkpoint.sign(&key).unwrap();
    let read = SignedCheckpoint::from_json(&signed.to_json()).unwrap();
    assert_eq!(read, signed);
    let public = CheckpointPublicKey::from_hex(&key.public_key().to_hex()).unwrap();
    assert_eq!(read.verify(&public).unwrap(), &checkpoint);
    assert_eq!(checkpoint.check(&*ledger).unwrap(), vec![]);
    // The secret never shows in debug output.
    assert!(!format!("{key:?}").contains(&key.to_hex()));
}

#[tokio::test]
async fn a_signed_checkpoint_changed_in_any_field_does_not_verify() {
    let ledger = Arc::new(MemoryLedger::new());
    completed(ledger.clone()).await;
    let key = CheckpointKey::generate().unwrap();
    let signed = Checkpoint::take(&*ledger).unwrap().sign(&key).unwrap();
    let public = key.public_key();
    let changes: [fn(&mut SignedCheckpoint); 4] = [
        |s| s.checkpoint.taken_at_ms += 1,
        |s| s.checkpoint.records -= 1,
        |s| s.checkpoint.heads[0].seq -= 1,
        |s| s.checkpoint.heads.clear(),
    ];
    for change in changes {
        let mut forged = signed.clone();
        change(&mut forged);
        assert!(matches!(
            forged.verify(&public),
            Err(CheckpointError::BadSignature(_))
        ));
    }
    let other = CheckpointKey::generate().unwrap().public_key();
    assert!(matches!(
        signed.verify(&other),
        Err(CheckpointError::BadSignature(_))
    ));
    // A head that could make two checkpoints read the same is refused.
    let mut odd = signed.checkpoint.clone();
    odd.heads[0].hash.push_str("\n1 2 ");
    assert!(matches!(
        odd.canonical(),
        Err(CheckpointError::Unreadable(_))
    ));
}

#[tokio::test]
async fn check_names_a_rewritten_a_removed_and_a_rolled_back_run() {
    let ledger = Arc::new(MemoryLedger::new());
    let a = completed(ledger.clone()).await;
    let b = completed(ledger.clone()).await;
    let checkpoint = Checkpoint::take(&*ledger).unwrap();
    // Run a: its last record rewritten (its hash taken again).
    let mut records = ledger.records(a).unwrap();
    records[2].at_us += 1;
    records[2].hash = records[2].compute_hash();
    ledger.replace(a, records);
    // Run b: its last record gone (the in-memory head stays: a cut).
    let mut records = ledger.records(b).unwrap();
    records.pop();
    ledger.replace(b, records);
    let mut findings = checkpoint.check(&*ledger).unwrap();
    findings.sort_by_key(|f| f.to_string());
    let mut expected = vec![
        Finding::Rewritten { run_id: a, seq: 2 },
        Finding::Cut {
            run_id: b,
            seq: 2,
            last: Some(1),
        },
    ];
    expected.sort_by_key(|f| f.to_string());
    assert_eq!(findings, expected);
    // Another ledger without either run.
    let empty = MemoryLedger::new();
    assert_eq!(checkpoint.check(&empty).unwrap().len(), 2);
    assert!(
        checkpoint
            .check(&empty)
            .unwrap()
            .iter()
            .all(|f| matches!(f, Finding::Removed { .. }))
    );
}

#[test]
fn a_key_that_is_not_32_hex_bytes_is_refused() {
    assert!(matches!(
        CheckpointKey::from_hex("abcd"),
        Err(CheckpointError::BadKey(m)) if m.contains("2 bytes, not 32")
    ));
    assert!(matches!(
        CheckpointPublicKey::from_hex("not hex"),
        Err(CheckpointError::BadKey(_))
    ));
    let key = CheckpointKey::generate().unwrap();
    let again = CheckpointKey::from_hex(&format!("{}\n", key.to_hex())).unwrap();
    assert_eq!(again.public_key(), key.public_key());
}
