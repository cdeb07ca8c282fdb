//! The `workflow` command on the ledger the main example writes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;

use examples::deploy_workflow::{FakeCloud, deploy, staging_goal, staging_root};
use workflow_core::ledger::{Ledger, SqliteLedger};

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

/// The main example's two runs (the incident, stopped; the clean one) and a
/// second clean run, in a fresh ledger file.
async fn ledger(name: &str) -> (Scratch, PathBuf, u64, u64, u64) {
    let dir = scratch(name);
    let path = dir.join("runs.db");
    let ledger = Arc::new(SqliteLedger::open(&path).expect("opens"));
    let incident =
        deploy::Workflow::new(staging_root(), FakeCloud::incident()).with_ledger(ledger.clone());
    let stopped = incident
        .run(staging_goal())
        .await
        .expect_err("stopped")
        .transcript
        .run_id();
    let clean =
        deploy::Workflow::new(staging_root(), FakeCloud::one_page()).with_ledger(ledger.clone());
    let done = clean
        .run(staging_goal())
        .await
        .expect("completes")
        .transcript
        .run_id();
    let again = clean
        .run(staging_goal())
        .await
        .expect("completes")
        .transcript
        .run_id();
    (dir, path, stopped, done, again)
}

#[tokio::test]
async fn runs_show_verify_export() {
    let (_dir, path, stopped, done, _) = ledger("basic").await;

    let out = workflow(&path, &["runs"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let listing = text(&out.stdout);
    assert!(
        listing.contains(&format!(
            "{stopped}\tdeploy\t3 records\tfailed in network: agent `network`: tool `describe_vpcs` failed (partial result)"
        )),
        "{listing}"
    );
    assert!(
        listing.contains(&format!("{done}\tdeploy\t4 records\tcompleted")),
        "{listing}"
    );

    let out = workflow(&path, &["show", &stopped.to_string()]);
    assert!(out.status.success());
    let shown = text(&out.stdout);
    assert_eq!(
        shown.lines().next(),
        Some(r#"root {"allowed_env":"staging","max_changed_routes":5,"tenant":"acme"}"#),
        "the run's pinned root comes first: {shown}"
    );
    assert!(
        shown.contains("#2 hop 2 planner -> network [TURN FAILED: agent `network`: tool `describe_vpcs` failed (partial result)"),
        "{shown}"
    );
    assert!(
        shown.contains(r#""target_env":"staging""#),
        "payloads are shown as JSON: {shown}"
    );
    assert!(
        shown.contains("after tools: describe_vpcs FAILED (partial result)"),
        "tool calls are shown: {shown}"
    );

    // Without `--tools` no arguments or results; with it, each call's.
    assert!(!shown.contains("    tool #0"), "{shown}");
    let out = workflow(&path, &["show", "--tools", &stopped.to_string()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    let call = shown
        .lines()
        .find(|l| l.starts_with("    tool #0 describe_vpcs("))
        .unwrap_or_else(|| panic!("the call is shown: {shown}"));
    assert!(
        call.contains(r#"describe_vpcs({"page":0})"#),
        "its arguments: {call}"
    );
    assert!(
        call.contains("-> FAILED (partial result): "),
        "its error: {call}"
    );
    let out = workflow(&path, &["show", "--tools", &done.to_string()]);
    let shown = text(&out.stdout);
    assert!(
        shown
            .lines()
            .any(|l| l.starts_with("    tool #0 describe_vpcs(") && l.contains(r#"-> {"vpcs":["#)),
        "a result is shown as recorded: {shown}"
    );

    let out = workflow(&path, &["verify"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert_eq!(text(&out.stdout).matches(": ok").count(), 3);

    let out = workflow(&path, &["export", &done.to_string()]);
    assert!(out.status.success());
    let lines: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect();
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[3]["to"], "end");
}

#[tokio::test]
async fn verify_fails_with_exit_code_1_on_a_tampered_run() {
    let (_dir, path, _, done, _) = ledger("tamper").await;
    let conn = rusqlite::Connection::open(&path).expect("opens");
    conn.execute(
        "DELETE FROM records WHERE run_id = ?1 AND seq = 3",
        [done as i64],
    )
    .expect("deletes the END record");
    let out = workflow(&path, &["verify", &done.to_string()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stdout).contains("records were cut off"),
        "{}",
        text(&out.stdout)
    );
}

#[tokio::test]
async fn diff_names_the_first_differing_transition() {
    let (_dir, path, stopped, done, again) = ledger("diff").await;
    let out = workflow(&path, &["diff", &done.to_string(), &again.to_string()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains("agree on all 4 transitions"));

    let out = workflow(&path, &["diff", &stopped.to_string(), &done.to_string()]);
    assert_eq!(out.status.code(), Some(1));
    let diff = text(&out.stdout);
    assert!(diff.contains("runs differ at transition #2"), "{diff}");
    assert!(
        diff.contains("TURN FAILED") && diff.contains("vpc-2stag"),
        "{diff}"
    );
}

#[test]
fn bad_input_exits_with_2_and_says_why() {
    let missing = std::env::temp_dir().join("wf-cli-no-such-file.db");
    let out = workflow(&missing, &["runs"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("no ledger file at"),
        "{}",
        text(&out.stderr)
    );
    assert!(!missing.exists(), "the command must not create the file");

    let junk = std::env::temp_dir().join(format!("wf-cli-junk-{}.db", std::process::id()));
    std::fs::write(&junk, b"this is not an sqlite file").expect("writes");
    let out = workflow(&junk, &["runs"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let _ = std::fs::remove_file(&junk);
}

#[tokio::test]
async fn an_unknown_run_exits_with_2() {
    let (_dir, path, ..) = ledger("unknown").await;
    let out = workflow(&path, &["show", "42"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("no run 42"),
        "{}",
        text(&out.stderr)
    );
}

#[tokio::test]
async fn show_says_when_a_run_recorded_no_root() {
    let (dir, path, _, done, _) = ledger("no-root").await;
    // The same run as a ledger written before roots were recorded holds it.
    let recorded = SqliteLedger::open(&path).expect("opens");
    let mut records = recorded.records(done).expect("the records");
    assert!(records[0].root.is_some());
    records[0].root = None;
    let old_path = dir.join("old.db");
    let old = SqliteLedger::open(&old_path).expect("opens");
    let mut prev = workflow_core::ledger::GENESIS.to_owned();
    for r in &mut records {
        r.prev_hash = prev;
        r.hash = r.compute_hash();
        prev = r.hash.clone();
        old.append(r).expect("appends");
    }
    drop(old);

    let out = workflow(&old_path, &["show", &done.to_string()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    assert!(
        shown
            .lines()
            .next()
            .is_some_and(|l| l.starts_with("root (not recorded")),
        "{shown}"
    );
    assert_eq!(shown.lines().filter(|l| l.starts_with('#')).count(), 4);
    let out = workflow(&old_path, &["verify"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
}
