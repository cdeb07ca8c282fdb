//! Runs worked on under a lease claimed elsewhere (a worker's queue):
//! `Executor::run_leased` starts a run under its given id and lease,
//! `resume_leased` carries one on without claiming it again; both commit
//! only while the lease holds, on the memory and SQLite ledgers.

use std::sync::Arc;
use std::time::Duration;

use workflow_core::RunError;
use workflow_core::ledger::{Ledger, LedgerError};

use crate::leases::{Store, stamp};

fn ledgers() -> Vec<(&'static str, Arc<dyn Ledger>)> {
    vec![
        (
            "memory",
            Arc::new(workflow_core::ledger::MemoryLedger::new()),
        ),
        (
            "sqlite",
            Arc::new(workflow_core::ledger::SqliteLedger::in_memory().unwrap()),
        ),
    ]
}

const LONG: Duration = Duration::from_secs(3600);

#[tokio::test]
async fn a_run_started_under_a_claimed_lease_takes_its_id_and_a_taken_over_lease_commits_nothing() {
    for (name, ledger) in ledgers() {
        let wf = stamp::Workflow::new((), Store::default()).with_ledger(ledger.clone());
        let lease = ledger.claim(41, "worker-a", LONG).unwrap();
        let done = wf.run_leased(lease.clone(), 7).await.expect("completes");
        assert_eq!(done.transcript.run_id(), 41, "{name}");
        assert_eq!(ledger.records(41).unwrap().len(), 3, "{name}");
        ledger.verify_run(41).expect("verifies");
        assert_eq!(
            ledger
                .lease(41)
                .unwrap()
                .map(|row| (row.token, row.expires_at_ms)),
            Some((lease.token, 0)),
            "{name}: released at the end"
        );

        // A run whose lease was taken over before its first commit: refused,
        // nothing written.
        let stale = ledger.claim(42, "worker-a", Duration::ZERO).unwrap();
        let newer = ledger.claim(42, "worker-b", LONG).unwrap();
        let refused = wf.run_leased(stale, 7).await.expect_err("fenced");
        assert!(
            matches!(
                refused.error,
                RunError::Ledger(LedgerError::Fenced { current, .. }) if current == newer.token
            ),
            "{name}: {:?}",
            refused.error
        );
        assert_eq!(ledger.records(42).unwrap(), [], "{name}");

        // resume_leased carries the cut-free run 41 to its recorded end
        // under a new lease, without claiming it again.
        let again = ledger.claim(41, "worker-c", LONG).unwrap();
        let resumed = wf.resume_leased(again).await.expect("its recorded output");
        assert_eq!(resumed.output, done.output, "{name}");
        assert_eq!(ledger.records(41).unwrap().len(), 3, "{name}");
    }
}
