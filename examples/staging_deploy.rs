//! The README's main example: the staging-deploy incident, stopped at the seam.
//!
//! Run: `cargo run --example staging_deploy`
//!
//! Three runs against a fake cloud, every transfer committed to an embedded
//! SQLite ledger before its receiver works (bundled SQLite: nothing to
//! install):
//!
//! 1. the incident: the VPC lookup returns an incomplete first page; the
//!    tool fails fast and the run stops before any plan exists;
//! 2. drift: the listing is complete but the staging VPC's tag drifted; the
//!    network agent falls back to a production VPC, the root invariant
//!    rejects the plan at terraform's receipt and terraform escalates: the
//!    run is suspended in the ledger. A new executor (as after a restart)
//!    reads the suspension back, an operator edits the plan to the right
//!    VPC, the edit is validated and checked again, and the run resumes;
//! 3. the clean run: every VPC on one page, tags right.

use std::sync::Arc;

use examples::deploy_workflow::{FakeCloud, deploy, staging_goal, staging_root};
use workflow_core::ledger::{Ledger, SqliteLedger, VerifyError};
use workflow_core::{Decision, Outcome};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let path = std::env::temp_dir().join("staging_deploy.db");
    let ledger = match SqliteLedger::open(&path) {
        Ok(ledger) => Arc::new(ledger),
        Err(e) => {
            eprintln!("cannot open the ledger at {}: {e}", path.display());
            std::process::exit(1);
        }
    };

    println!("== run 1: the VPC lookup returns an incomplete first page ==");
    let wf = deploy::Workflow::new(staging_root(), FakeCloud::incident())
        .with_ledger(ledger.clone())
        .with_progress(progress);
    match wf.run(staging_goal()).await {
        Ok(done) => fail(&format!("the run completed: {:?}", done.output)),
        Err(aborted) => {
            print!("{}", aborted.transcript);
            println!("stopped: {}", aborted.error);
            print!("{}", aborted.transcript.summary());
            report_ledger(ledger.as_ref(), aborted.transcript.run_id(), &path);
        }
    }
    report_applied(&wf.deps().applied());

    println!();
    println!("== run 2: the staging VPC's tag drifted; terraform escalates ==");
    let wf = deploy::Workflow::new(staging_root(), FakeCloud::drifted())
        .with_ledger(ledger.clone())
        .with_progress(progress);
    // A suspension is an outcome of its own: the run waits for a person.
    let run_id = match wf.run_outcome(staging_goal()).await {
        Outcome::AwaitingDecision(waiting) => {
            print!("{}", waiting.transcript);
            println!(
                "the run waits for a decision on the transfer to `{}`: {}",
                waiting.agent, waiting.reason
            );
            waiting.transcript.run_id()
        }
        Outcome::Completed(done) => fail(&format!("the run completed: {:?}", done.output)),
        Outcome::Stopped(aborted) => fail(&format!("the run was not suspended: {aborted}")),
    };
    report_applied(&wf.deps().applied());
    drop(wf);

    // A new executor on the same ledger file, as a new process would open it.
    let reopened = match SqliteLedger::open(&path) {
        Ok(ledger) => Arc::new(ledger),
        Err(e) => fail(&format!("cannot reopen the ledger: {e}")),
    };
    let wf = deploy::Workflow::new(staging_root(), FakeCloud::drifted())
        .with_ledger(reopened.clone())
        .with_progress(progress);
    let suspension = match wf.suspension(run_id) {
        Ok(s) => s,
        Err(e) => fail(&format!("no suspension: {e}")),
    };
    let plan = suspension
        .payload_json()
        .unwrap_or_else(|e| fail(&format!("the plan does not read: {e}")));
    println!("after a restart, run {run_id} waits for a decision on: {plan}");
    let mut edited: serde_json::Value =
        serde_json::from_str(&plan).unwrap_or_else(|e| fail(&format!("not JSON: {e}")));
    edited["vpc_id"] = "vpc-2stag".into();
    edited["vpc_env"] = "staging".into();
    println!("the operator edits the plan to vpc-2stag (staging) and approves it");
    let decision = Decision::Edit {
        by: "ops@acme".into(),
        payload: edited,
    };
    match wf.decide(&suspension, decision).await {
        Ok(done) => {
            print!("{}", done.transcript);
            println!("completed after the decision: {:?}", done.output);
            print!("{}", done.transcript.summary());
            report_ledger(reopened.as_ref(), run_id, &path);
        }
        Err(aborted) => fail(&format!("{aborted}")),
    }
    report_applied(&wf.deps().applied());

    println!();
    println!("== run 3: the lookup lists every VPC, tags right ==");
    let wf = deploy::Workflow::new(staging_root(), FakeCloud::one_page())
        .with_ledger(ledger.clone())
        .with_progress(progress);
    match wf.run(staging_goal()).await {
        Ok(done) => {
            print!("{}", done.transcript);
            println!("completed: {:?}", done.output);
            print!("{}", done.transcript.summary());
            report_ledger(ledger.as_ref(), done.transcript.run_id(), &path);
        }
        Err(aborted) => {
            print!("{}", aborted.transcript);
            fail(&format!("{aborted}"));
        }
    }
    println!();
    println!(
        "max hops of any run (computed at compile time): {}",
        deploy::MAX_HOPS
    );
}

/// Progress on standard error, as each agent's turn starts.
fn progress(p: &workflow_core::Progress) {
    eprintln!(
        "[run {} +{} ms] hop {}: {}",
        p.run_id, p.elapsed_ms, p.hop, p.agent
    );
}

fn fail(message: &str) -> ! {
    eprintln!("unexpected: {message}");
    std::process::exit(1);
}

fn report_applied(applied: &[String]) {
    println!(
        "route changes applied: {}",
        if applied.is_empty() {
            "none".to_owned()
        } else {
            applied.join(", ")
        }
    );
}

/// Reads the run back from the ledger file and verifies its hash chain.
fn report_ledger(ledger: &dyn Ledger, run_id: u64, path: &std::path::Path) {
    let records = ledger.records(run_id).map(|r| r.len()).unwrap_or(0);
    match ledger.verify_run(run_id) {
        Ok(()) => println!(
            "ledger {}: run {run_id}, {records} records committed, hash chain verified",
            path.display()
        ),
        Err(VerifyError::Tampered(tampering)) => {
            println!("ledger: run {run_id} does not verify: {tampering}")
        }
        Err(e) => println!("ledger: run {run_id}: {e}"),
    }
}
