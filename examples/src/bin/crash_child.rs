//! Runs the loop workload over and over against an SQLite ledger until it is
//! killed: the crash test (`tests/it/crash.rs`) kills it at random points.
//!
//! Usage: `crash_child LEDGER_FILE ROUNDS`

use std::sync::Arc;

use examples::loop_bench::counter;
use workflow_core::ledger::{Durability, SqliteLedger};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(path), Some(rounds)) = (args.get(1), args.get(2).and_then(|r| r.parse::<u32>().ok()))
    else {
        eprintln!("usage: crash_child LEDGER_FILE ROUNDS");
        std::process::exit(2);
    };
    let ledger = match SqliteLedger::open_with(path, Durability::ProcessCrash) {
        Ok(ledger) => Arc::new(ledger),
        Err(e) => {
            eprintln!("cannot open {path}: {e}");
            std::process::exit(2);
        }
    };
    let wf = counter::Workflow::new((), ())
        .with_ledger(ledger)
        // A killed child's run can be taken over this soon after its
        // last write (the test resumes right after the kills).
        .with_lease_ttl(examples::campaign::CHILD_LEASE);
    // Tells the test the ledger is open: it kills at a random moment from
    // here, not from the process's start (whose cost varies with the
    // machine's load).
    println!("ready");
    loop {
        if let Err(aborted) = wf.run(rounds).await {
            eprintln!("{aborted}");
            std::process::exit(1);
        }
    }
}
