//! Runs worked on under a lease claimed elsewhere: a worker claims a run
//! from a shared queue (the claim is the run's lease, with its fencing
//! token) and hands the lease to the executor, which then starts, resumes or
//! decides the run under it without claiming it again. Every commit of the
//! run is checked against the lease ([`Ledger::append_leased`]), and the
//! lease is released when the run's future ends or is dropped.
//!
//! [`Ledger::append_leased`]: crate::ledger::Ledger::append_leased

use crate::drive::{Aborted, Completed, Session, Suspension};
use crate::ledger::{Lease, LeaseGuard};
use crate::run::{Runtime, Transcript};
use crate::spec::{Decision, RunError, Workflow};

use super::Executor;

impl<W: Workflow> Executor<W> {
    /// The attached ledger, or the error of a run that needs one.
    fn ledger_for(&self, run_id: u64) -> Result<&dyn crate::ledger::Ledger, Box<Aborted>> {
        self.ledger().ok_or_else(|| {
            Box::new(Aborted {
                error: RunError::Resume("no ledger is attached (`Executor::with_ledger`)".into()),
                transcript: Transcript::new(run_id, W::GRAPH),
            })
        })
    }

    /// Starts run `lease.run_id` — a run with no records yet, submitted
    /// with its id (to a work queue) and claimed as `lease` — and drives it
    /// to its end as [`run`](Self::run) does, every commit made under
    /// `lease`: a commit after the lease was taken over is refused
    /// (`RunError::Ledger(LedgerError::Fenced)`) and nothing of it lands.
    pub async fn run_leased(
        &self,
        lease: Lease,
        input: W::Input,
    ) -> Result<Completed<W::Output>, Aborted> {
        let ledger = self.ledger_for(lease.run_id).map_err(|e| *e)?;
        let mut run = Runtime::numbered(&self.root, &self.deps, self.limits(), lease.run_id);
        run.pin_root();
        run.hold(LeaseGuard {
            ledger,
            lease: std::sync::Arc::new(lease),
        });
        let state = W::start(input, &mut run).map(Some);
        // Driven in place (`Session::drive`): the future holds the session
        // once.
        let mut session = Session { run, state };
        let ended = session.drive().await;
        session.ended(ended)
    }

    /// Carries on run `lease.run_id` from its records, as
    /// [`resume`](Self::resume) does, under `lease` (already claimed: it is
    /// not claimed again).
    pub async fn resume_leased(&self, lease: Lease) -> Result<Completed<W::Output>, Aborted> {
        let run_id = lease.run_id;
        let ledger = self.ledger_for(run_id).map_err(|e| *e)?;
        let guard = LeaseGuard {
            ledger,
            lease: std::sync::Arc::new(lease),
        };
        let records = self
            .verified_records(ledger, run_id)
            .map_err(|error| Aborted {
                error,
                transcript: Transcript::new(run_id, W::GRAPH),
            })?;
        self.carry_on(ledger, Some(guard), run_id, &records, None)
            .await
    }

    /// Applies `decision` to suspended run `lease.run_id` and carries it
    /// on, as [`decide`](Self::decide) does with the suspension read from
    /// the ledger, under `lease` (already claimed). A decision that cannot
    /// be applied is `RunError::Decision` and nothing is recorded.
    pub async fn decide_leased(
        &self,
        lease: Lease,
        decision: Decision,
    ) -> Result<Completed<W::Output>, Aborted> {
        let run_id = lease.run_id;
        let ledger = self.ledger_for(run_id).map_err(|e| *e)?;
        let guard = LeaseGuard {
            ledger,
            lease: std::sync::Arc::new(lease),
        };
        let records = self
            .verified_records(ledger, run_id)
            .map_err(|error| Aborted {
                error,
                transcript: Transcript::new(run_id, W::GRAPH),
            })?;
        if !Suspension::ends_escalated(&records) {
            return Err(Aborted {
                error: RunError::Decision(format!("run {run_id} is not waiting for a decision")),
                transcript: Transcript::new(run_id, W::GRAPH),
            });
        }
        self.carry_on(ledger, Some(guard), run_id, &records, Some(decision))
            .await
    }
}
