//! Stored records the library would never write (a payload nested past the
//! depth limit, a key given twice): the read commands name what is wrong
//! and never crash.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;

use examples::deploy_workflow::{FakeCloud, deploy, staging_goal, staging_root};
use workflow_core::ledger::SqliteLedger;

use crate::fixtures::{Scratch, scratch};

fn workflow(ledger: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_workflow"))
        .arg("--ledger")
        .arg(ledger)
        .args(args)
        .output()
        .expect("the command runs")
}

/// What the command printed, both streams.
fn printed(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Two clean runs of the main example in a fresh ledger file.
async fn two_runs(name: &str) -> (Scratch, PathBuf, u64, u64) {
    let dir = scratch(name);
    let path = dir.join("runs.db");
    let ledger = Arc::new(SqliteLedger::open(&path).expect("opens"));
    let wf = deploy::Workflow::new(staging_root(), FakeCloud::one_page()).with_ledger(ledger);
    let a = wf.run(staging_goal()).await.expect("completes");
    let b = wf.run(staging_goal()).await.expect("completes");
    (dir, path, a.transcript.run_id(), b.transcript.run_id())
}

/// Rewrites the stored JSON of record `seq` of `run` with `edit`.
fn rewrite(path: &Path, run: u64, seq: u32, edit: impl FnOnce(String) -> String) {
    let conn = rusqlite::Connection::open(path).expect("opens");
    let json: String = conn
        .query_row(
            "SELECT record FROM records WHERE run_id = ?1 AND seq = ?2",
            (run as i64, seq),
            |row| row.get(0),
        )
        .expect("the record");
    conn.execute(
        "UPDATE records SET record = ?3 WHERE run_id = ?1 AND seq = ?2",
        (run as i64, seq, edit(json)),
    )
    .expect("rewrites");
}

/// A payload 5,000 levels deep (hand-written MessagePack) is shown as an
/// error naming the limit, and `diff` finds the difference: no stack
/// overflow, no abort.
#[tokio::test]
async fn a_stored_payload_past_the_depth_limit_is_named_by_show_and_diff() {
    let (_dir, path, a, b) = two_runs("deep-payload").await;
    // Both runs' record #1, at two depths past the limit: two payloads
    // that do not read back are still told apart (by their bytes).
    for (run, depth) in [(a, 5_000), (b, 5_001)] {
        let mut deep = vec![0x91u8; depth];
        deep.push(0xc0);
        let deep_hex: String = deep.iter().map(|b| format!("{b:02x}")).collect();
        rewrite(&path, run, 1, |json| {
            let mut record: serde_json::Value = serde_json::from_str(&json).expect("JSON");
            record["payload_format"] = "msgpack".into();
            record["payload"] = deep_hex.into();
            record.to_string()
        });
    }
    let out = workflow(&path, &["show", &a.to_string()]);
    assert!(out.status.code().is_some(), "not killed by a signal");
    assert!(
        printed(&out).contains("limit of 64 levels"),
        "{}",
        printed(&out)
    );

    let out = workflow(&path, &["diff", &a.to_string(), &b.to_string()]);
    assert_eq!(out.status.code(), Some(1), "{}", printed(&out));
    assert!(
        printed(&out).contains("runs differ at transition #1"),
        "{}",
        printed(&out)
    );
}

/// A stored record that gives a key twice is refused naming the key, not
/// read with the last value.
#[tokio::test]
async fn a_stored_record_with_a_key_twice_is_refused_naming_it() {
    let (_dir, path, a, _) = two_runs("key-twice").await;
    rewrite(&path, a, 1, |json| format!(r#"{{"hop":7,{}"#, &json[1..]));
    let out = workflow(&path, &["show", &a.to_string()]);
    assert_ne!(out.status.code(), Some(0), "{}", printed(&out));
    assert!(printed(&out).contains("`hop` twice"), "{}", printed(&out));
}
