//! `replay` and `schema` on the main example: run in-process through
//! `workflow_cli::run_for` (what a project's own binary calls), and the
//! generic `workflow` binary's answer that it cannot run them.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use examples::deploy_workflow::{Env, FakeCloud, deploy, staging_goal, staging_root};
use workflow_cli::exit;
use workflow_core::Decision;
use workflow_core::ledger::SqliteLedger;

use crate::fixtures::{Scratch, scratch};

/// Runs `args` with the deploy workflow under `root`: exit code, stdout,
/// stderr.
pub fn deploy_cli(root: fn() -> deploy::Root, args: &[&str]) -> (u8, String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let argv = std::iter::once("workflow-deploy").chain(args.iter().copied());
    let code = workflow_cli::run_for(
        argv,
        || deploy::Workflow::new(root(), FakeCloud::one_page()),
        &mut out,
        &mut err,
    );
    (
        code,
        String::from_utf8_lossy(&out).into_owned(),
        String::from_utf8_lossy(&err).into_owned(),
    )
}

/// The main example's runs in a fresh ledger file: the clean run, the
/// incident, and the drifted run escalated, edited and completed.
pub fn ledger(name: &str) -> (Scratch, PathBuf, [u64; 3]) {
    let dir = scratch(name);
    let path = dir.join("runs.db");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime");
    let runs = rt.block_on(async {
        let ledger = Arc::new(SqliteLedger::open(&path).expect("opens"));
        let wf = |cloud| deploy::Workflow::new(staging_root(), cloud).with_ledger(ledger.clone());
        let clean = wf(FakeCloud::one_page()).run(staging_goal()).await;
        let incident = wf(FakeCloud::incident()).run(staging_goal()).await;
        let drifted = wf(FakeCloud::drifted());
        let escalated = drifted.run(staging_goal()).await.expect_err("suspended");
        let run = escalated.transcript.run_id();
        let suspension = drifted.suspension(run).expect("suspended");
        let mut plan: serde_json::Value =
            serde_json::from_str(&suspension.payload_json().unwrap()).unwrap();
        plan["vpc_id"] = "vpc-2stag".into();
        plan["vpc_env"] = "staging".into();
        let by = "ops@acme".to_owned();
        drifted
            .decide(&suspension, Decision::Edit { by, payload: plan })
            .await
            .expect("completes after the edit");
        [
            clean.expect("completes").transcript.run_id(),
            incident.expect_err("stopped").transcript.run_id(),
            run,
        ]
    });
    (dir, path, runs)
}

pub fn arg(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 temp path")
}

#[test]
fn every_run_of_the_main_example_replays_identically() {
    let (_dir, path, runs) = ledger("replay");
    let (code, out, err) = deploy_cli(staging_root, &["--ledger", arg(&path), "replay"]);
    assert_eq!(code, exit::OK, "{out}{err}");
    for (run, n) in runs.iter().zip([4, 3, 5]) {
        assert!(
            out.contains(&format!("run {run} replays identically ({n} transitions)")),
            "{out}"
        );
    }
    assert!(
        err.contains("3 runs of `deploy` replayed, 3 identically"),
        "{err}"
    );

    // One run, as JSON.
    let run = runs[2].to_string();
    let (code, out, _) = deploy_cli(
        staging_root,
        &["--ledger", arg(&path), "replay", &run, "--json"],
    );
    assert_eq!(code, exit::OK);
    let report: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON line");
    assert_eq!(report["run_id"], runs[2]);
    assert_eq!(report["divergence"], serde_json::Value::Null);
}

#[test]
fn a_divergence_exits_with_1_and_names_the_transition() {
    let (_dir, path, runs) = ledger("diverge");
    // Replayed under a root pinned to production: the run was pinned to
    // staging (its first record holds the root), so the replay parts at
    // transition #0, naming both roots, before any agent works.
    let production = || deploy::Root {
        allowed_env: Env::Production,
        ..staging_root()
    };
    let run = runs[0].to_string();
    let (code, out, err) = deploy_cli(production, &["--ledger", arg(&path), "replay", &run]);
    assert_eq!(code, exit::DIFFERENT, "{out}{err}");
    assert!(
        out.starts_with(&format!(
            "run {run} diverges at transition #0: the pinned root invariants differ\n  recorded: {{\"allowed_env\":\"staging\",\"max_changed_routes\":5,\"tenant\":\"acme\"}}\n  replayed: {{\"allowed_env\":\"production\""
        )),
        "{out}"
    );
}

#[test]
fn replay_refuses_bad_input_with_2() {
    let (_dir, path, _) = ledger("replay-bad");
    let (code, _, err) = deploy_cli(staging_root, &["--ledger", arg(&path), "replay", "42"]);
    assert_eq!(code, exit::BAD_INPUT);
    assert!(err.contains("no run 42"), "{err}");

    let empty = scratch("replay-missing");
    let missing = empty.join("runs.db");
    let (code, _, err) = deploy_cli(staging_root, &["--ledger", arg(&missing), "replay"]);
    assert_eq!(code, exit::BAD_INPUT);
    assert!(err.contains("no ledger file at"), "{err}");

    // A run of another workflow, named: refused; among all runs: skipped.
    let other_dir = scratch("replay-other");
    let other = other_dir.join("runs.db");
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    let run = rt.block_on(async {
        let ledger = Arc::new(SqliteLedger::open(&other).expect("opens"));
        let wf = examples::loop_bench::counter::Workflow::new((), ()).with_ledger(ledger);
        wf.run(1).await.expect("runs").transcript.run_id()
    });
    let (code, _, err) = deploy_cli(
        staging_root,
        &["--ledger", arg(&other), "replay", &run.to_string()],
    );
    assert_eq!(code, exit::BAD_INPUT);
    assert!(
        err.contains("recorded by workflow `counter`; this binary replays `deploy`"),
        "{err}"
    );
    let (code, _, err) = deploy_cli(staging_root, &["--ledger", arg(&other), "replay"]);
    assert_eq!(code, exit::OK);
    assert!(err.contains("1 runs of other workflows skipped"), "{err}");
}

#[test]
fn a_tampered_run_is_not_replayed_and_exits_with_1() {
    let (_dir, path, runs) = ledger("replay-tampered");
    let conn = rusqlite::Connection::open(&path).expect("opens");
    conn.execute(
        "UPDATE records SET record = json_set(record, '$.hop', 7) WHERE run_id = ?1 AND seq = 1",
        [runs[0] as i64],
    )
    .expect("edits a record");
    let (code, out, _) = deploy_cli(staging_root, &["--ledger", arg(&path), "replay"]);
    assert_eq!(code, exit::DIFFERENT);
    assert!(
        out.contains(&format!("run {}: record #1 was edited", runs[0])),
        "{out}"
    );
}

#[test]
fn schema_export_then_check_and_drift() {
    let folder = scratch("schemas");
    let dir = folder.join("deploy");
    let d = arg(&dir);
    let (code, out, err) = deploy_cli(staging_root, &["schema", "export", d]);
    assert_eq!(code, exit::OK, "{err}");
    assert!(out.starts_with("wrote "), "{out}");
    // What the command exports is exactly what the example publishes.
    let published = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/schemas/deploy");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    for name in &names {
        assert_eq!(
            std::fs::read_to_string(dir.join(name)).unwrap(),
            std::fs::read_to_string(published.join(name)).unwrap(),
            "{name:?}"
        );
    }

    let (code, out, _) = deploy_cli(staging_root, &["schema", "check", d]);
    assert_eq!(code, exit::OK, "{out}");
    assert!(out.contains("are current"), "{out}");

    std::fs::write(dir.join("deploy.Goal.schema.json"), "{}\n").unwrap();
    std::fs::remove_file(dir.join("tools.json")).unwrap();
    std::fs::write(dir.join("Stale.schema.json"), "{}\n").unwrap();
    let (code, out, _) = deploy_cli(staging_root, &["schema", "check", d]);
    assert_eq!(code, exit::DIFFERENT, "{out}");
    for expected in [
        "changed:     deploy.Goal.schema.json",
        "unpublished: tools.json",
        "removed:     Stale.schema.json",
    ] {
        assert!(out.contains(expected), "{out}");
    }

    let empty = scratch("schemas-missing");
    let missing = empty.join("nothing-here");
    let (code, _, err) = deploy_cli(staging_root, &["schema", "check", arg(&missing)]);
    assert_eq!(code, exit::BAD_INPUT);
    assert!(err.contains("no published schemas at"), "{err}");
}

#[test]
fn the_generic_binary_says_it_cannot_replay_or_export_schemas() {
    for args in [&["replay"][..], &["schema", "check", "schemas"]] {
        let out = Command::new(env!("CARGO_BIN_EXE_workflow"))
            .args(args)
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("workflow_cli::main_for"), "{err}");
    }
    // A usage error is bad input too; help is not an error.
    let (code, _, err) = deploy_cli(staging_root, &["replay", "not-a-number"]);
    assert_eq!(code, exit::BAD_INPUT, "{err}");
    let (code, out, _) = deploy_cli(staging_root, &["--help"]);
    assert_eq!(code, exit::OK);
    assert!(out.contains("replay") && out.contains("schema"), "{out}");
}

#[test]
fn a_run_whose_input_the_workflow_no_longer_reads_exits_with_1() {
    use workflow_core::ledger::{GENESIS, Ledger, PayloadFormat};
    let (_dir, path, runs) = ledger("replay-input");
    // The clean run, its goal rewritten (and the chain rebuilt, so that it
    // verifies): what an older workflow with another input type recorded.
    let mut records = SqliteLedger::open(&path).unwrap().records(runs[0]).unwrap();
    records[0].payload_format = PayloadFormat::Json;
    records[0].payload = hex_json(r#"{"service":"checkout","region":"eu"}"#);
    let mut prev = GENESIS.to_owned();
    for r in &mut records {
        r.prev_hash = prev;
        r.hash = r.compute_hash();
        prev = r.hash.clone();
    }
    let old_dir = scratch("replay-input-old");
    let rewritten = old_dir.join("runs.db");
    let ledger = SqliteLedger::open(&rewritten).unwrap();
    for r in &records {
        ledger.append(r).unwrap();
    }
    let (code, out, err) = deploy_cli(staging_root, &["--ledger", arg(&rewritten), "replay"]);
    assert_eq!(code, exit::DIFFERENT, "{out}{err}");
    let run = runs[0];
    assert!(
        out.contains(&format!(
            "run {run} cannot be replayed: run {run}'s recorded input does not read"
        )),
        "{out}"
    );
}

/// JSON text as the hex a record's payload holds.
fn hex_json(text: &str) -> String {
    text.bytes().map(|b| format!("{b:02x}")).collect()
}
