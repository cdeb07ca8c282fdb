//! The main example's runs replay identically from its SQLite ledger: the
//! clean run, the incident (stopped by the fail-fast tool), and the drifted
//! run that was escalated, edited by a person and completed.

use std::sync::Arc;

use examples::deploy_workflow::{FakeCloud, deploy, staging_goal, staging_root};
use workflow_core::ledger::{Ledger, SqliteLedger};
use workflow_core::{Decision, Difference, Receipt};

use crate::fixtures::scratch;

/// The three runs of `staging_deploy`, recorded in a fresh ledger file.
async fn recorded_runs(ledger: &Arc<SqliteLedger>) -> [u64; 3] {
    let clean =
        deploy::Workflow::new(staging_root(), FakeCloud::one_page()).with_ledger(ledger.clone());
    let clean = clean
        .run(staging_goal())
        .await
        .expect("completes")
        .transcript
        .run_id();

    let incident =
        deploy::Workflow::new(staging_root(), FakeCloud::incident()).with_ledger(ledger.clone());
    let incident = incident
        .run(staging_goal())
        .await
        .expect_err("the fail-fast tool stops it")
        .transcript
        .run_id();

    let drifted =
        deploy::Workflow::new(staging_root(), FakeCloud::drifted()).with_ledger(ledger.clone());
    let escalated = drifted
        .run(staging_goal())
        .await
        .expect_err("suspended")
        .transcript
        .run_id();
    let suspension = drifted.suspension(escalated).expect("suspended");
    let mut plan: serde_json::Value =
        serde_json::from_str(&suspension.payload_json().unwrap()).unwrap();
    plan["vpc_id"] = "vpc-2stag".into();
    plan["vpc_env"] = "staging".into();
    drifted
        .decide(
            &suspension,
            Decision::Edit {
                by: "ops@acme".into(),
                payload: plan,
            },
        )
        .await
        .expect("completes after the edit");
    [clean, incident, escalated]
}

#[tokio::test]
async fn the_main_example_runs_replay_identically() {
    let dir = scratch("replay");
    let ledger = Arc::new(SqliteLedger::open(dir.join("runs.db")).unwrap());
    let runs = recorded_runs(&ledger).await;

    let edited = ledger.records(runs[2]).unwrap();
    assert!(
        edited
            .iter()
            .any(|r| matches!(r.receipt, Receipt::Approved { edited: true, .. })),
        "the escalated run carries the person's edit"
    );
    // The replaying executor's cloud answers nothing: every tool response
    // comes from the record, and no route is changed.
    let replayer = deploy::Workflow::new(
        staging_root(),
        FakeCloud {
            vpcs: Vec::new(),
            ..FakeCloud::one_page()
        },
    );
    for (run, transitions) in runs.into_iter().zip([4, 3, 5]) {
        let records = ledger.records(run).unwrap();
        let report = replayer.replay(&records).await.expect("replays");
        assert!(report.is_identical(), "{report}");
        assert_eq!(report.transitions, transitions, "run {run}");
    }
    assert!(replayer.deps().applied().is_empty(), "no tool was called");

    // Under a root pinned to production, the same records part at once:
    // the run's first record holds the root it was pinned to (staging).
    let production = deploy::Root {
        allowed_env: examples::deploy_workflow::Env::Production,
        ..staging_root()
    };
    let report = deploy::Workflow::new(production, FakeCloud::one_page())
        .replay(&ledger.records(runs[0]).unwrap())
        .await
        .expect("replays");
    let d = report.divergence.expect("diverges");
    assert_eq!((d.seq, &d.difference), (0, &Difference::Root), "{d}");
    assert!(d.recorded.as_deref().unwrap().contains("staging"), "{d}");
    assert!(d.replayed.as_deref().unwrap().contains("production"), "{d}");

    // The deploy workflow's own `workflow` command replays the file too.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_workflow_deploy"))
        .arg("--ledger")
        .arg(dir.join("runs.db"))
        .arg("replay")
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert_eq!(stdout.matches("replays identically").count(), 3, "{stdout}");
}
