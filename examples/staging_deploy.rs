//! The README's main example: the staging-deploy incident, stopped at the seam.
//!
//! Run: `cargo run --example staging_deploy`

use std::sync::Arc;

use examples::deploy_workflow::{FakeCloud, deploy, staging_goal, staging_root};
use workflow_core::ledger::{Ledger, SqliteLedger};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    // Every transfer is committed to an embedded SQLite ledger before its
    // receiver works (bundled SQLite: nothing to install).
    let path = std::env::temp_dir().join("staging_deploy.db");
    let ledger = match SqliteLedger::open(&path) {
        Ok(ledger) => Arc::new(ledger),
        Err(e) => {
            eprintln!("cannot open the ledger at {}: {e}", path.display());
            std::process::exit(1);
        }
    };

    println!("== run 1: the VPC lookup returns an incomplete first page ==");
    let cloud = FakeCloud::incident();
    let wf = deploy::Workflow::new(staging_root(), cloud).with_ledger(ledger.clone());
    match wf.run(staging_goal()).await {
        Ok(done) => {
            println!("unexpected: the run completed: {:?}", done.output);
            std::process::exit(1);
        }
        Err(aborted) => {
            print!("{}", aborted.transcript);
            println!("stopped at the seam: {}", aborted.error);
            report_ledger(ledger.as_ref(), aborted.transcript.run_id(), &path);
        }
    }
    let applied = wf.deps().applied();
    println!(
        "route changes applied: {}",
        if applied.is_empty() {
            "none".to_owned()
        } else {
            applied.join(", ")
        }
    );
    if !applied.is_empty() {
        std::process::exit(1);
    }

    println!();
    println!("== run 2: the lookup lists every VPC ==");
    let wf =
        deploy::Workflow::new(staging_root(), FakeCloud::one_page()).with_ledger(ledger.clone());
    match wf.run(staging_goal()).await {
        Ok(done) => {
            print!("{}", done.transcript);
            println!("completed: {:?}", done.output);
            report_ledger(ledger.as_ref(), done.transcript.run_id(), &path);
        }
        Err(aborted) => {
            print!("{}", aborted.transcript);
            println!("unexpected: {aborted}");
            std::process::exit(1);
        }
    }
    println!();
    println!(
        "max hops of any run (computed at compile time): {}",
        deploy::MAX_HOPS
    );
}

/// Reads the run back from the ledger file and verifies its hash chain.
fn report_ledger(ledger: &dyn Ledger, run_id: u64, path: &std::path::Path) {
    let records = ledger.records(run_id).map(|r| r.len()).unwrap_or(0);
    match ledger.verify_run(run_id) {
        Ok(Ok(())) => println!(
            "ledger {}: run {run_id}, {records} records committed, hash chain verified",
            path.display()
        ),
        Ok(Err(tampering)) => println!("ledger: run {run_id} does not verify: {tampering}"),
        Err(e) => println!("ledger: cannot read run {run_id}: {e}"),
    }
}
