//! The `workflow` command's read commands against PostgreSQL
//! (`--ledger postgres://...`, workflow-cli's feature `postgres`).

use std::sync::Arc;

use examples::deploy_workflow::{FakeCloud, deploy, staging_goal, staging_root};
use workflow_postgres::PostgresLedger;

use crate::cluster::cluster_or_skip;

fn workflow(args: &[&str]) -> (u8, String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = workflow_cli::run(
        std::iter::once("workflow").chain(args.iter().copied()),
        &mut out,
        &mut err,
    );
    (
        code,
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

#[test]
fn runs_show_verify_and_diff_read_a_postgres_ledger_and_write_nothing() {
    let cluster = cluster_or_skip!();
    let url = cluster.database("cli");
    let (code, _, err) = workflow(&["--ledger", &url, "runs"]);
    assert_eq!(
        (code, err.trim()),
        (
            2,
            "workflow: the database holds no ledger (no workflow_* tables); nothing was changed"
        )
    );
    assert!(
        cluster
            .rows(
                "cli",
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
            )
            .is_empty(),
        "a read command created nothing"
    );

    let ledger = Arc::new(PostgresLedger::connect(&url).expect("connects"));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (a, b) = runtime.block_on(async {
        let wf = |cloud| deploy::Workflow::new(staging_root(), cloud).with_ledger(ledger.clone());
        let a = wf(FakeCloud::one_page())
            .run(staging_goal())
            .await
            .expect("completes");
        let b = wf(FakeCloud::incident())
            .run(staging_goal())
            .await
            .expect_err("stopped");
        (a.transcript.run_id(), b.transcript.run_id())
    });

    let (code, out, err) = workflow(&["--ledger", &url, "runs"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.lines().count(), 2, "{out}");
    assert!(out.contains(&format!("{a}\tdeploy")), "{out}");
    let (code, out, _) = workflow(&["--ledger", &url, "verify"]);
    assert_eq!(code, 0);
    assert!(out.contains(&format!("run {a}: ok")) && out.contains(&format!("run {b}: ok")));
    let (code, out, _) = workflow(&["--ledger", &url, "show", &a.to_string()]);
    assert_eq!(code, 0);
    assert!(out.lines().count() >= 3, "{out}");
    let (code, out, _) = workflow(&["--ledger", &url, "diff", &a.to_string(), &b.to_string()]);
    assert_eq!(code, 1, "{out}");

    // The deploy workflow's own command replays them from PostgreSQL.
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = workflow_cli::run_for(
        ["workflow", "--ledger", &url, "replay"],
        || deploy::Workflow::new(staging_root(), FakeCloud::one_page()),
        &mut out,
        &mut err,
    );
    let out = String::from_utf8(out).unwrap();
    assert_eq!(code, 0, "{out}{}", String::from_utf8_lossy(&err));
    assert_eq!(out.matches("replays identically").count(), 2, "{out}");

    // An edit in the database: verify says so, exit 1.
    cluster.sql(
        "cli",
        &format!(
            "UPDATE workflow_records SET record = replace(record, '\"hop\":2', '\"hop\":1')
             WHERE run_id = {} AND seq = 2",
            a as i64
        ),
    );
    let (code, out, _) = workflow(&["--ledger", &url, "verify", &a.to_string()]);
    assert_eq!(code, 1, "{out}");
    assert!(!out.contains("ok"), "{out}");
}

fn workflow_for(args: &[&str]) -> (u8, String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = workflow_cli::run_for(
        std::iter::once("workflow").chain(args.iter().copied()),
        || deploy::Workflow::new(staging_root(), FakeCloud::one_page()),
        &mut out,
        &mut err,
    );
    (
        code,
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

/// `workflow submit` queues runs of the binary's workflow, `workflow
/// worker` drives them with progress and a summary, `workflow decide`
/// queues a decision only for a suspended run.
#[test]
fn submit_worker_and_decide_run_the_queue_from_the_command_line() {
    let cluster = cluster_or_skip!();
    let url = cluster.database("cliqueue");
    let input = cluster.dir().join("goal.json");
    std::fs::write(&input, serde_json::to_string(&staging_goal()).unwrap()).unwrap();
    let input = input.to_str().unwrap();

    let (code, _, err) = workflow_for(&["--ledger", "runs.db", "submit", input]);
    assert_eq!(code, 2);
    assert!(err.contains("pass `--ledger postgres://...`"), "{err}");
    let bad = cluster.dir().join("bad.json");
    std::fs::write(&bad, "{\"nope\":1}").unwrap();
    let (code, _, err) = workflow_for(&["--ledger", &url, "submit", bad.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("is not a `"), "{err}");

    let (code, out, err) = workflow_for(&[
        "--ledger", &url, "submit", input, "--run", "40", "--count", "3",
    ]);
    assert_eq!(
        (code, out.as_str()),
        (0, "40\tsubmitted\n41\tsubmitted\n42\tsubmitted\n"),
        "{err}"
    );
    let (code, out, _) = workflow_for(&["--ledger", &url, "submit", input, "--run", "42"]);
    assert_eq!(
        (code, out.as_str()),
        (1, "42\talready submitted: unchanged\n")
    );

    let (code, _, err) = workflow_for(&[
        "--ledger",
        &url,
        "worker",
        "--concurrency",
        "2",
        "--until-drained",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("worker: run 41: claimed (token 1) to start"),
        "{err}"
    );
    assert!(err.contains("worker: run 42: done: completed"), "{err}");
    assert!(
        err.trim_end().ends_with(
            "worker: 3 claimed (3 started, 0 resumed, 0 decided): 3 completed, 0 suspended, 0 failed, 0 fenced, 0 handed back, 0 queue errors"
        ),
        "{err}"
    );
    let (code, out, _) = workflow(&["--ledger", &url, "verify"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out.lines().count(), 3, "{out}");

    let (code, out, _) = workflow(&["--ledger", &url, "decide", "40", "--by", "ops", "--approve"]);
    assert_eq!(code, 1);
    assert!(
        out.contains("run 40 is not suspended in the queue"),
        "{out}"
    );
    let (code, _, err) = workflow(&[
        "--ledger",
        &url,
        "decide",
        "40",
        "--by",
        "ops",
        "--approve",
        "--reject",
        "no",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("exactly one of"), "{err}");
}
