//! Revocations that are recorded and durable: the agent that granted a
//! lease revokes it from a later turn (`cx.revoke(lease)`, recorded with
//! the turn; nobody else can), and an operator's revocation
//! (`Executor::revoke`) is kept by the ledger beside the run's records. A
//! revoked lease voids every lease granted under it; both kinds survive a
//! restart, are applied again on resume, and in a replay.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use workflow_core::ledger::{Ledger, MemoryLedger, SqliteLedger};
use workflow_core::prelude::*;
use workflow_core::{LeaseAct, LeaseId, RevokeRefused};

use crate::fixtures::{assert_rejected, escalated};

/// What the run's input asks the agents to do.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Script {
    /// Whether `boss`, in its second turn, revokes the lease it granted
    /// `worker` in its first.
    pub boss_revokes: bool,
    /// The lease `worker` tries to revoke (by its record), if any.
    pub worker_revokes: Option<u32>,
}

#[workflow(entry = origin, output = u32)]
pub mod office {
    use super::*;

    /// A handoff to `boss`.
    #[handoff]
    pub struct ToBoss {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Plan>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
        pub script: Script,
        /// Which round of `boss`'s.
        pub round: u32,
        /// Why `worker`'s revocation was refused, if it tried one.
        pub refused: Option<RevokeRefused>,
    }

    /// A handoff to `worker`.
    #[handoff]
    pub struct ToWorker {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Relay>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
        pub script: Script,
    }

    /// A handoff to `closer`.
    #[handoff]
    pub struct ToCloser {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Close>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
    }

    #[agent(owns = [Origin], to = [boss])]
    async fn origin(script: Script, cx: origin::Context<'_>) -> Result<origin::Next, Reject> {
        Ok(origin::Next::Boss(ToBoss {
            op: Operation::new("plan", ""),
            scope: cx.lease(authority::Plan).as_long_as_mine(),
            evidence: vec![],
            open: vec![],
            stop: StopWhen::at_hop(MAX_HOPS),
            script,
            round: 0,
            refused: None,
        }))
    }

    #[agent(owns = [Plan], to = [worker, closer])]
    async fn boss(task: ToBoss, cx: boss::Context<'_>) -> Result<boss::Next, Reject> {
        if task.round == 0 {
            return Ok(boss::Next::Worker(ToWorker {
                op: Operation::new("relay", ""),
                scope: cx.lease(authority::Relay).as_long_as_mine(),
                evidence: vec![],
                open: vec![],
                stop: StopWhen::at_hop(MAX_HOPS),
                script: task.script,
            }));
        }
        if task.script.boss_revokes {
            // The lease it granted in its first turn: that turn's transfer.
            let granted = cx.earlier_turns()[0].output_seq() as u32;
            cx.revoke(LeaseId {
                run_id: cx.run_id(),
                seq: granted,
            })
            .map_err(|e| Reject::because(e.to_string()))?;
        }
        Ok(boss::Next::Closer(ToCloser {
            op: Operation::new("close", ""),
            scope: cx.lease(authority::Close).as_long_as_mine(),
            evidence: vec![],
            open: vec![],
            stop: StopWhen::at_hop(MAX_HOPS),
        }))
    }

    #[agent(owns = [Relay], to = [boss(max = 1)])]
    async fn worker(task: ToWorker, cx: worker::Context<'_>) -> Result<worker::Next, Reject> {
        let refused = task.script.worker_revokes.and_then(|seq| {
            cx.revoke(LeaseId {
                run_id: cx.run_id(),
                seq,
            })
            .err()
        });
        Ok(worker::Next::Boss(ToBoss {
            op: Operation::new("report", ""),
            scope: cx.lease(authority::Plan).as_long_as_mine(),
            evidence: vec![],
            open: vec![],
            stop: StopWhen::at_hop(MAX_HOPS),
            script: task.script,
            round: 1,
            refused,
        }))
    }

    #[agent(owns = [Close], to = [END], on_reject = escalate)]
    async fn closer(_task: ToCloser, _cx: closer::Context<'_>) -> Result<closer::Next, Reject> {
        Ok(closer::Next::End(7))
    }
}

const NOBODY_REVOKES: Script = Script {
    boss_revokes: false,
    worker_revokes: None,
};

/// The lease `boss` grants `worker` (records: #0 START -> origin, #1
/// origin -> boss, #2 boss -> worker, #3 worker -> boss, #4 boss -> closer).
const WORKERS_LEASE: u32 = 2;

#[tokio::test]
async fn without_revocations_the_office_closes() {
    let done = office::Workflow::new((), ())
        .run(NOBODY_REVOKES)
        .await
        .expect("completes");
    assert_eq!(done.output, 7);
    assert_eq!(done.transcript.len(), 6);
}

#[tokio::test]
async fn a_lease_revoked_by_its_grantor_voids_what_was_granted_under_it_at_the_next_receipt() {
    let aborted = office::Workflow::new((), ())
        .run(Script {
            boss_revokes: true,
            ..NOBODY_REVOKES
        })
        .await
        .expect_err("revoked");
    // `boss`'s own lease came back from `worker`, granted under the lease
    // it revoked: what it hands on is rejected, naming the revoked lease.
    assert_eq!(
        escalated(&aborted.error),
        &RejectReason::LeaseRevoked {
            authority: "Relay".into(),
            seq: WORKERS_LEASE,
        }
    );
    // The revocation is recorded with the turn that made it.
    let boss_acts: Vec<LeaseAct> = aborted
        .transcript
        .turns()
        .filter(|(_, t)| t.agent == "boss")
        .flat_map(|(_, t)| t.leases.clone())
        .collect();
    assert_eq!(
        boss_acts,
        vec![LeaseAct::Revocation {
            lease: WORKERS_LEASE
        }]
    );
}

#[tokio::test]
async fn only_the_grantor_can_revoke_a_lease() {
    // `worker` tries the lease `origin` granted `boss` (#1), the caller's
    // (#0), one never granted, and the one it works under (#2, `boss`'s).
    let cases = [
        (
            1,
            RevokeRefused::NotGrantor {
                seq: 1,
                granted_by: "origin".into(),
            },
        ),
        (
            0,
            RevokeRefused::NotGrantor {
                seq: 0,
                granted_by: "START".into(),
            },
        ),
        (99, RevokeRefused::NoSuchLease { seq: 99 }),
        (
            WORKERS_LEASE,
            RevokeRefused::NotGrantor {
                seq: WORKERS_LEASE,
                granted_by: "boss".into(),
            },
        ),
    ];
    for (seq, refusal) in cases {
        let done = office::Workflow::new((), ())
            .run(Script {
                worker_revokes: Some(seq),
                ..NOBODY_REVOKES
            })
            .await
            .expect("a refused revocation revokes nothing");
        assert_eq!(done.output, 7);
        let report: serde_json::Value =
            serde_json::from_str(&done.transcript.payload(3).unwrap()).unwrap();
        assert_eq!(
            report["refused"],
            serde_json::to_value(&refusal).unwrap(),
            "revoking #{seq}"
        );
        assert!(done.transcript.turns().all(|(_, t)| t.leases.is_empty()));
    }
}

#[tokio::test]
async fn a_grantors_revocation_is_applied_again_when_the_run_is_carried_on() {
    let ledger = Arc::new(MemoryLedger::new());
    let wf = office::Workflow::new((), ()).with_ledger(ledger.clone());
    let aborted = wf
        .run(Script {
            boss_revokes: true,
            ..NOBODY_REVOKES
        })
        .await
        .expect_err("suspended at closer's receipt");
    let run_id = aborted.transcript.run_id();
    // A restart, then a person edits the handoff: it is checked again, on a
    // run rebuilt from its records, and the revocation still holds.
    let wf = office::Workflow::new((), ()).with_ledger(ledger.clone());
    let suspension = wf.suspension(run_id).expect("waits");
    let edited: serde_json::Value =
        serde_json::from_str(&suspension.payload_json().unwrap()).unwrap();
    let again = wf
        .decide(
            &suspension,
            Decision::Edit {
                by: "ann".into(),
                payload: edited,
            },
        )
        .await
        .expect_err("still revoked");
    assert_eq!(
        escalated(&again.error),
        &RejectReason::LeaseRevoked {
            authority: "Relay".into(),
            seq: WORKERS_LEASE,
        }
    );
    assert_eq!(ledger.verify_run(run_id), Ok(()));
}

/// A ledger file in a fresh temporary folder.
fn ledger_file(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "workflow-revocations-{name}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("runs.db")
}

#[tokio::test]
async fn an_operators_revocation_survives_a_restart_and_is_applied_on_resume() {
    let path = ledger_file("restart");
    let run_id = {
        let ledger = Arc::new(SqliteLedger::open(&path).unwrap());
        let wf = office::Workflow::new((), ()).with_ledger(ledger.clone());
        let mut session = wf.start(NOBODY_REVOKES);
        session.step().await.expect("origin's turn");
        // #1 (origin -> boss) waits for its receipt: revoke its lease, then
        // the process dies.
        let run_id = session.transcript().run_id();
        wf.revoke(LeaseId { run_id, seq: 1 }).expect("kept");
        let kept = ledger.revocations(run_id).unwrap();
        assert_eq!(
            kept.iter().map(|r| (r.lease, r.after)).collect::<Vec<_>>(),
            vec![(LeaseId { run_id, seq: 1 }, Some(0))]
        );
        run_id
    };
    // Another process, the same file: its executor's registry is empty, the
    // ledger is not. `origin`'s turn runs again, and its handoff's lease is
    // rejected at the receipt.
    let ledger = Arc::new(SqliteLedger::open(&path).unwrap());
    let wf = office::Workflow::new((), ()).with_ledger(ledger.clone());
    let aborted = wf.resume(run_id).await.expect_err("revoked");
    assert_rejected(
        &aborted,
        "origin",
        "boss",
        RejectReason::LeaseRevoked {
            authority: "Plan".into(),
            seq: 1,
        },
    );
    assert_eq!(ledger.verify_run(run_id), Ok(()));
    // A lease of another run is untouched.
    let done = wf.run(NOBODY_REVOKES).await.expect("another run");
    assert_eq!(done.output, 7);
}

#[tokio::test]
async fn a_replay_applies_an_operators_revocation_where_the_run_met_it() {
    let ledger = Arc::new(SqliteLedger::in_memory().unwrap());
    let wf = office::Workflow::new((), ()).with_ledger(ledger.clone());
    let mut session = wf.start(NOBODY_REVOKES);
    session.step().await.expect("origin's turn");
    let run_id = session.transcript().run_id();
    wf.revoke(LeaseId { run_id, seq: 1 }).expect("kept");
    session.finish().await.expect_err("revoked");

    // Replayed from the ledger by another executor (its own registry is
    // empty), with the ledger's revocations: the same run.
    let report = office::Workflow::new((), ())
        .with_ledger(ledger.clone())
        .replay_run(run_id)
        .await
        .expect("replays");
    assert_eq!(report.divergence, None, "{report:?}");
    // From the records alone, the revocation is missing: the replay parts
    // from the recording at the receipt that rejected the lease.
    let records = ledger.records(run_id).unwrap();
    let report = office::Workflow::new((), ())
        .replay(&records)
        .await
        .expect("replays");
    assert_eq!(report.divergence.map(|d| d.seq), Some(1));
}

#[tokio::test]
async fn a_ledger_that_keeps_no_revocations_says_so() {
    /// Records only: the trait's default for revocations.
    struct RecordsOnly(MemoryLedger);
    impl Ledger for RecordsOnly {
        fn append(
            &self,
            record: &workflow_core::ledger::LedgerRecord,
        ) -> Result<(), workflow_core::ledger::LedgerError> {
            self.0.append(record)
        }
        fn records(
            &self,
            run_id: u64,
        ) -> Result<Vec<workflow_core::ledger::LedgerRecord>, workflow_core::ledger::LedgerError>
        {
            self.0.records(run_id)
        }
        fn runs(&self) -> Result<Vec<u64>, workflow_core::ledger::LedgerError> {
            self.0.runs()
        }
        fn head(
            &self,
            run_id: u64,
        ) -> Result<Option<(u32, String)>, workflow_core::ledger::LedgerError> {
            self.0.head(run_id)
        }
    }
    let wf = office::Workflow::new((), ()).with_ledger(Arc::new(RecordsOnly(MemoryLedger::new())));
    let lease = LeaseId { run_id: 1, seq: 1 };
    let error = wf.revoke(lease).expect_err("not kept");
    assert!(
        error.to_string().contains("keeps no revocations"),
        "{error}"
    );
    // It still holds in this process.
    assert!(wf.revocations().is_revoked(lease));
}
