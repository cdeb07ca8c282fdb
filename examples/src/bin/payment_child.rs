//! Runs payments over and over against an SQLite ledger until it is
//! killed: the crash test of tool calls (`tests/it/crash_tools.rs`) kills it
//! at random points.
//!
//! Usage: `payment_child LEDGER_FILE REQUESTS_FILE CHARGES_FILE`

use std::sync::Arc;
use std::time::Duration;

use examples::payment::{Provider, order, payment};
use workflow_core::ledger::{Durability, SqliteLedger};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(path), Some(requests), Some(charges)) = (args.get(1), args.get(2), args.get(3))
    else {
        eprintln!("usage: payment_child LEDGER_FILE REQUESTS_FILE CHARGES_FILE");
        std::process::exit(2);
    };
    let ledger = match SqliteLedger::open_with(path, Durability::ProcessCrash) {
        Ok(ledger) => Arc::new(ledger),
        Err(e) => {
            eprintln!("cannot open {path}: {e}");
            std::process::exit(2);
        }
    };
    let provider = Provider {
        requests: requests.into(),
        charges: charges.into(),
        mail_delay: Duration::from_millis(2),
    };
    let wf = payment::Workflow::new((), provider)
        .with_ledger(ledger)
        // A killed child's run can be taken over this soon after its
        // last write (the test resumes right after the kills).
        .with_lease_ttl(examples::campaign::CHILD_LEASE);
    loop {
        if let Err(aborted) = wf.run(order()).await {
            eprintln!("{aborted}");
            std::process::exit(1);
        }
    }
}
