//! `workflow show` and `workflow runs` on a run recorded in audit mode: the
//! mode and every verdict are impossible to miss.

use std::process::Command;
use std::sync::Arc;

use serde_json::{Value, json};
use workflow_core::Mode;
use workflow_core::ledger::SqliteLedger;
use workflow_core::prelude::*;

use crate::fixtures::scratch;

/// One agent that passes its input on to `END`; social security numbers
/// are forbidden.
#[workflow(entry = echo, output = Value, deps = ())]
pub mod relay {
    use super::*;

    /// Nothing but what never travels.
    #[invariants(forbid = ["ssn"])]
    pub struct Root {}

    #[agent(to = [END])]
    async fn echo(input: Value, _cx: echo::Context<'_>) -> Result<echo::Next, Reject> {
        Ok(echo::Next::End(input))
    }
}

#[tokio::test]
async fn show_and_runs_mark_an_audited_run_and_each_verdict() {
    let dir = scratch("audit");
    let path = dir.join("runs.db");
    let ledger = Arc::new(SqliteLedger::open(&path).expect("opens"));
    let wf = relay::Workflow::new(relay::Root {}, ())
        .with_ledger(ledger.clone())
        .with_mode(Mode::Audit);
    let audited = wf
        .run(json!({"ssn": "123"}))
        .await
        .expect("audit lets it through")
        .transcript
        .run_id();
    let clean = relay::Workflow::new(relay::Root {}, ())
        .with_ledger(ledger.clone())
        .run(json!({"name": "ada"}))
        .await
        .expect("clean")
        .transcript
        .run_id();
    let show = |run: u64| {
        let out = Command::new(env!("CARGO_BIN_EXE_workflow"))
            .arg("--ledger")
            .arg(&path)
            .args(["show", &run.to_string()])
            .output()
            .expect("runs");
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let shown = show(audited);
    let first = shown.lines().next().unwrap_or_default();
    assert_eq!(
        first,
        "AUDIT MODE: 2 failed checks let through, the first at #0"
    );
    assert!(
        shown.contains(
            "#0 hop 0 START -> echo [AUDIT: would reject: payload carries forbidden field `ssn`]"
        ),
        "{shown}"
    );
    assert!(
        shown.contains("-> END [AUDIT: would reject: payload carries forbidden field `ssn`]"),
        "{shown}"
    );
    assert!(!show(clean).contains("AUDIT"), "a clean enforced run");
    let out = Command::new(env!("CARGO_BIN_EXE_workflow"))
        .arg("--ledger")
        .arg(&path)
        .arg("runs")
        .output()
        .expect("runs");
    let listing = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        listing.contains(&format!(
            "{audited}\trelay\t2 records\tcompleted\tAUDIT MODE: 2 failed checks let through, the first at #0"
        )),
        "{listing}"
    );
    // The audited records verify: the mode is part of their hash.
    let out = Command::new(env!("CARGO_BIN_EXE_workflow"))
        .arg("--ledger")
        .arg(&path)
        .args(["verify", &audited.to_string()])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0));
}
