//! Signed checkpoints against someone who can write the ledger file: a
//! payload rewritten and the whole chain re-hashed, a run's tail cut
//! together with its head, the file rolled back to an older copy, a whole
//! run deleted. Plain `verify` passes each of these; `verify --checkpoint`
//! names each. A checkpoint that is not signed by the trusted key is
//! refused (exit 2).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::Duration;

use examples::deploy_workflow::{FakeCloud, deploy, staging_goal, staging_root};
use examples::payment::{Provider, order, payment};
use workflow_core::ledger::{JournalEntry, Ledger, LedgerRecord, SqliteLedger};

use crate::fixtures::{Scratch, scratch};

fn workflow(ledger: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_workflow"))
        .arg("--ledger")
        .arg(ledger)
        .args(args)
        .output()
        .expect("the command runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A folder with a key pair (`key`, `key.pub`) and a ledger of two runs of
/// the main example (stopped, completed).
async fn setup(name: &str) -> (Scratch, PathBuf, u64, u64) {
    let dir = scratch(name);
    let path = dir.join("runs.db");
    let ledger = Arc::new(SqliteLedger::open(&path).expect("opens"));
    let incident =
        deploy::Workflow::new(staging_root(), FakeCloud::incident()).with_ledger(ledger.clone());
    let stopped = incident.run(staging_goal()).await.expect_err("stopped");
    let clean =
        deploy::Workflow::new(staging_root(), FakeCloud::one_page()).with_ledger(ledger.clone());
    let done = clean.run(staging_goal()).await.expect("completes");
    let out = workflow(&path, &["keygen", "--out", &arg(&dir.join("key"))]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    (
        dir,
        path,
        stopped.transcript.run_id(),
        done.transcript.run_id(),
    )
}

fn arg(path: &Path) -> String {
    path.display().to_string()
}

/// `workflow checkpoint` into `dir/checkpoint.json`.
fn take_checkpoint(dir: &Path, path: &Path) -> String {
    let out = workflow(
        path,
        &[
            "checkpoint",
            "--key",
            &arg(&dir.join("key")),
            "--out",
            &arg(&dir.join("checkpoint.json")),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    text(&out.stdout)
}

/// `workflow verify`, then `workflow verify --checkpoint`: both outputs.
fn verify_both(dir: &Path, path: &Path) -> (Output, Output) {
    let plain = workflow(path, &["verify"]);
    let anchored = workflow(
        path,
        &[
            "verify",
            "--checkpoint",
            &arg(&dir.join("checkpoint.json")),
            "--public-key",
            &arg(&dir.join("key.pub")),
        ],
    );
    (plain, anchored)
}

/// Stores `records` (one whole run, re-chained) and its head in the file,
/// and binds its journal to them again, as someone with write access and
/// the source code would.
fn overwrite(path: &Path, records: &[LedgerRecord]) {
    let conn = rusqlite::Connection::open(path).expect("opens");
    for r in records {
        conn.execute(
            "UPDATE records SET record = ?1 WHERE run_id = ?2 AND seq = ?3",
            rusqlite::params![serde_json::to_string(r).unwrap(), r.run_id as i64, r.seq],
        )
        .expect("rewrites");
    }
    let last = records.last().expect("a record");
    conn.execute(
        "UPDATE heads SET seq = ?1, hash = ?2 WHERE run_id = ?3",
        rusqlite::params![last.seq, last.hash, last.run_id as i64],
    )
    .expect("moves the head");
    drop(conn);
    // The tool-call journal, bound to the records, bound again.
    let ledger = SqliteLedger::open(path).expect("opens");
    for (turn, anchor) in (1u32..).zip(records) {
        for entry in ledger.tool_calls(anchor.run_id, turn).expect("reads") {
            let entry = JournalEntry::bind(anchor.run_id, turn, &anchor.hash, entry.call);
            ledger
                .append_tool_call(anchor.run_id, turn, &entry)
                .expect("rebinds");
        }
    }
}

fn records(path: &Path, run: u64) -> Vec<LedgerRecord> {
    SqliteLedger::open(path)
        .expect("opens")
        .records(run)
        .expect("reads")
}

#[tokio::test]
async fn a_rewritten_and_rehashed_payload_passes_verify_but_not_the_checkpoint() {
    let (dir, path, stopped, done) = setup("cp-rewrite").await;
    let taken = take_checkpoint(&dir, &path);
    assert!(
        taken.contains("checkpoint of 2 runs (7 records)"),
        "{taken}"
    );

    // The planner's handoff now says "prodenv" where it said "staging"
    // (same length in MessagePack), and every hash after it is recomputed.
    let mut rewritten = records(&path, done);
    let (from, to) = (hex("staging"), hex("prodenv"));
    assert!(rewritten[1].payload.contains(&from));
    rewritten[1].payload = rewritten[1].payload.replace(&from, &to);
    let mut prev = rewritten[0].hash.clone();
    for r in &mut rewritten[1..] {
        r.prev_hash = prev;
        r.hash = r.compute_hash();
        prev = r.hash.clone();
    }
    overwrite(&path, &rewritten);
    assert!(
        records(&path, done)[1]
            .payload_json()
            .unwrap()
            .contains("prodenv")
    );

    let (plain, anchored) = verify_both(&dir, &path);
    assert_eq!(
        plain.status.code(),
        Some(0),
        "the chain alone holds: {}",
        text(&plain.stdout)
    );
    assert_eq!(
        anchored.status.code(),
        Some(1),
        "{}",
        text(&anchored.stdout)
    );
    let report = text(&anchored.stdout);
    assert!(
        report.contains(&format!(
            "checkpoint: run {done} was rewritten: its record #3 is not the one the checkpoint signed"
        )),
        "{report}"
    );
    assert!(
        !report.contains(&format!("run {stopped} was")),
        "the other run is as signed: {report}"
    );
}

fn hex(text: &str) -> String {
    text.bytes().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test]
async fn a_tail_cut_together_with_its_head_is_found() {
    let (dir, path, _, done) = setup("cp-cut").await;
    take_checkpoint(&dir, &path);
    let kept = records(&path, done)[..3].to_vec();
    let conn = rusqlite::Connection::open(&path).expect("opens");
    conn.execute(
        "DELETE FROM records WHERE run_id = ?1 AND seq = 3",
        [done as i64],
    )
    .expect("cuts");
    drop(conn);
    overwrite(&path, &kept);

    let (plain, anchored) = verify_both(&dir, &path);
    assert_eq!(plain.status.code(), Some(0), "{}", text(&plain.stdout));
    assert_eq!(anchored.status.code(), Some(1));
    assert!(
        text(&anchored.stdout).contains(&format!(
            "checkpoint: run {done} was rolled back: the checkpoint signed #3, the run now ends at #2 with a head to match"
        )),
        "{}",
        text(&anchored.stdout)
    );
}

#[tokio::test]
async fn a_tail_cut_without_its_head_is_found_by_both() {
    let (dir, path, _, done) = setup("cp-cut-head").await;
    take_checkpoint(&dir, &path);
    let conn = rusqlite::Connection::open(&path).expect("opens");
    conn.execute(
        "DELETE FROM records WHERE run_id = ?1 AND seq = 3",
        [done as i64],
    )
    .expect("cuts");
    drop(conn);
    let (plain, anchored) = verify_both(&dir, &path);
    assert_eq!(plain.status.code(), Some(1));
    assert_eq!(anchored.status.code(), Some(1));
    assert!(
        text(&anchored.stdout).contains(&format!(
            "checkpoint: run {done} was cut: the checkpoint signed #3, the run now ends at #2"
        )),
        "{}",
        text(&anchored.stdout)
    );
}

#[tokio::test]
async fn a_whole_run_deleted_is_found() {
    let (dir, path, stopped, done) = setup("cp-removed").await;
    take_checkpoint(&dir, &path);
    let conn = rusqlite::Connection::open(&path).expect("opens");
    conn.execute("DELETE FROM records WHERE run_id = ?1", [stopped as i64])
        .expect("deletes");
    conn.execute("DELETE FROM heads WHERE run_id = ?1", [stopped as i64])
        .expect("deletes");
    drop(conn);
    let (plain, anchored) = verify_both(&dir, &path);
    assert_eq!(plain.status.code(), Some(0), "{}", text(&plain.stdout));
    assert_eq!(anchored.status.code(), Some(1));
    let report = text(&anchored.stdout);
    assert!(
        report.contains(&format!(
            "checkpoint: run {stopped} was removed: the checkpoint signed #2, the ledger has no such run"
        )),
        "{report}"
    );
    assert!(report.contains(&format!("run {done}: ok")), "{report}");
}

#[tokio::test(flavor = "current_thread")]
async fn a_ledger_rolled_back_to_an_older_copy_is_found() {
    let (dir, path, stopped, done) = setup("cp-rollback").await;
    // A payment run cut while it mails the receipt.
    let provider = |delay| Provider {
        requests: dir.join("requests.log"),
        charges: dir.join("charges.log"),
        mail_delay: delay,
    };
    let ledger = Arc::new(SqliteLedger::open(&path).expect("opens"));
    let wf =
        payment::Workflow::new((), provider(Duration::from_secs(3600))).with_ledger(ledger.clone());
    let cut = tokio::time::timeout(Duration::from_millis(300), wf.run(order())).await;
    assert!(cut.is_err());
    let paying = *ledger
        .runs()
        .unwrap()
        .iter()
        .find(|r| ![stopped, done].contains(r))
        .unwrap();
    drop((wf, ledger));
    // The copy kept aside: the payment not finished yet.
    let old = dir.join("old.db");
    std::fs::copy(&path, &old).expect("copies");

    // The payment completes; another run is recorded; a checkpoint.
    let ledger = Arc::new(SqliteLedger::open(&path).expect("opens"));
    let wf = payment::Workflow::new((), provider(Duration::ZERO)).with_ledger(ledger.clone());
    wf.resume(paying).await.expect("the payment completes");
    let clean =
        deploy::Workflow::new(staging_root(), FakeCloud::one_page()).with_ledger(ledger.clone());
    let later = clean
        .run(staging_goal())
        .await
        .expect("completes")
        .transcript
        .run_id();
    drop((wf, clean, ledger));
    take_checkpoint(&dir, &path);

    // The older copy put back.
    std::fs::copy(&old, &path).expect("rolls back");
    let (plain, anchored) = verify_both(&dir, &path);
    assert_eq!(plain.status.code(), Some(0), "{}", text(&plain.stdout));
    assert_eq!(anchored.status.code(), Some(1));
    let report = text(&anchored.stdout);
    assert!(
        report.contains(&format!(
            "checkpoint: run {paying} was rolled back: the checkpoint signed #2, the run now ends at #1"
        )),
        "{report}"
    );
    assert!(
        report.contains(&format!("checkpoint: run {later} was removed")),
        "{report}"
    );
    assert_eq!(report.matches("checkpoint: ").count(), 2, "{report}");
}

#[tokio::test]
async fn a_forged_checkpoint_is_refused_with_exit_code_2() {
    let (dir, path, _, done) = setup("cp-forged").await;
    take_checkpoint(&dir, &path);
    let file = dir.join("checkpoint.json");
    let signed = std::fs::read_to_string(&file).unwrap();
    let (plain, anchored) = verify_both(&dir, &path);
    assert_eq!(plain.status.code(), Some(0));
    assert_eq!(
        anchored.status.code(),
        Some(0),
        "{}",
        text(&anchored.stdout)
    );
    assert!(text(&anchored.stdout).contains("checkpoint: all 2 runs as signed (7 records"));

    // A head changed in the file (to vouch for a rewritten run): the
    // signature no longer holds.
    let last = records(&path, done).pop().unwrap();
    let forged = signed.replace(&last.hash, &"0".repeat(64));
    assert_ne!(forged, signed);
    std::fs::write(&file, &forged).unwrap();
    let (_, anchored) = verify_both(&dir, &path);
    assert_eq!(anchored.status.code(), Some(2));
    assert!(
        text(&anchored.stderr).contains("signature does not verify"),
        "{}",
        text(&anchored.stderr)
    );

    // Signed, but by another key than the trusted one.
    let other = dir.join("other");
    let out = workflow(&path, &["keygen", "--out", &arg(&other)]);
    assert_eq!(out.status.code(), Some(0));
    std::fs::remove_file(&file).unwrap();
    let out = workflow(
        &path,
        &["checkpoint", "--key", &arg(&other), "--out", &arg(&file)],
    );
    assert_eq!(out.status.code(), Some(0));
    let (_, anchored) = verify_both(&dir, &path);
    assert_eq!(anchored.status.code(), Some(2));
    assert!(
        text(&anchored.stderr).contains("was signed by key"),
        "{}",
        text(&anchored.stderr)
    );

    // Not a checkpoint at all.
    std::fs::write(&file, "{}").unwrap();
    let (_, anchored) = verify_both(&dir, &path);
    assert_eq!(anchored.status.code(), Some(2));
    assert!(text(&anchored.stderr).contains("not a checkpoint"));
}

#[tokio::test]
async fn no_checkpoint_is_taken_of_a_ledger_that_does_not_verify() {
    let (dir, path, _, done) = setup("cp-refused").await;
    let conn = rusqlite::Connection::open(&path).expect("opens");
    conn.execute(
        "DELETE FROM records WHERE run_id = ?1 AND seq = 3",
        [done as i64],
    )
    .expect("cuts");
    drop(conn);
    let out = workflow(
        &path,
        &[
            "checkpoint",
            "--key",
            &arg(&dir.join("key")),
            "--out",
            &arg(&dir.join("checkpoint.json")),
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains(&format!("run {done} does not verify, no checkpoint taken")),
        "{}",
        text(&out.stderr)
    );
    assert!(!dir.join("checkpoint.json").exists());
}

#[tokio::test]
async fn verify_names_a_journaled_tool_call_edited_in_the_file() {
    let (_dir, path, stopped, done) = setup("cp-journal").await;
    let conn = rusqlite::Connection::open(&path).expect("opens");
    let edited = conn
        .execute(
            "UPDATE tool_calls SET call = json_set(call, '$.call.outcome.result', '{\"vpcs\":[]}') \
             WHERE run_id = ?1 AND turn_seq = 2 AND idx = 0",
            [done as i64],
        )
        .expect("edits");
    assert_eq!(edited, 1, "the network agent's lookup is journaled");
    drop(conn);
    let out = workflow(&path, &["verify"]);
    assert_eq!(out.status.code(), Some(1));
    let report = text(&out.stdout);
    assert!(
        report.contains(&format!(
            "run {done}: the tool-call journal was tampered with: run {done}, turn #2, tool call 0: its result does not match its digest"
        )),
        "{report}"
    );
    assert!(report.contains(&format!("run {stopped}: ok")), "{report}");
}
