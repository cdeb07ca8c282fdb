//! One resumer per run: resuming claims the run's lease first; a second
//! resumer gets `LedgerError::Claimed` naming the holder, and a holder
//! whose lease was taken over cannot write anything for the run
//! (`LedgerError::Fenced`). The same rules on the memory and SQLite ledgers.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use workflow_core::ledger::{Lease, Ledger, LedgerError, MemoryLedger, SqliteLedger};
use workflow_core::prelude::*;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Written {
    pub stamp: u32,
}
impl FailFast for Written {}

/// A store whose writes are counted across executors; a write may hang
/// (the process dies while it waits), pause, or wait for a gate.
#[derive(Clone, Default)]
pub struct Store {
    pub writes: Arc<AtomicU32>,
    pub hang: bool,
    pub pause: Duration,
    pub gate: Option<Arc<tokio::sync::Notify>>,
}

#[workflow(entry = intake, output = Written, deps = Store)]
pub mod stamp {
    use super::*;

    #[handoff]
    pub struct Job {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Write>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
        pub value: u32,
    }

    /// Writes once; not to be done twice.
    #[tool(needs = Write, effect = write)]
    async fn write(value: u32, store: &Store) -> Result<Written, ToolError> {
        let n = store.writes.fetch_add(1, Ordering::SeqCst) + 1;
        if store.hang {
            std::future::pending::<()>().await;
        }
        if let Some(gate) = &store.gate {
            gate.notified().await;
        }
        tokio::time::sleep(store.pause).await;
        Ok(Written {
            stamp: value * 100 + n,
        })
    }

    #[agent(owns = [Intake], to = [writer])]
    async fn intake(value: u32, cx: intake::Context<'_>) -> Result<intake::Next, Reject> {
        Ok(intake::Next::Writer(Job {
            op: Operation::new("write", ""),
            scope: cx.lease(authority::Write).as_long_as_mine(),
            evidence: vec![],
            open: vec![],
            stop: StopWhen::at_hop(cx.hop() + 8),
            value,
        }))
    }

    #[agent(owns = [Write], tools = [write], to = [END])]
    async fn writer(job: Job, cx: writer::Context<'_>) -> Result<writer::Next, Reject> {
        let written = cx.call(tools::write, job.value).await?;
        Ok(writer::Next::End(written))
    }
}

/// Runs until the writer's tool hangs, then drops the run as a crash would
/// cut it: its id (its turn at the writer is to run again).
async fn cut_run(ledger: Arc<dyn Ledger>) -> u64 {
    let store = Store {
        hang: true,
        ..Store::default()
    };
    let wf = stamp::Workflow::new((), store).with_ledger(ledger.clone());
    let cut = tokio::time::timeout(Duration::from_millis(30), wf.run(7)).await;
    assert!(cut.is_err(), "the run hangs in the write");
    let runs = ledger.runs().unwrap();
    assert_eq!(
        ledger.records(runs[0]).unwrap().len(),
        2,
        "cut in the writer"
    );
    runs[0]
}

fn ledgers() -> Vec<(&'static str, Arc<dyn Ledger>)> {
    vec![
        ("memory", Arc::new(MemoryLedger::new())),
        ("sqlite", Arc::new(SqliteLedger::in_memory().unwrap())),
    ]
}

#[tokio::test]
async fn a_second_claim_is_refused_naming_the_holder_until_the_lease_is_released() {
    for (name, ledger) in ledgers() {
        let ttl = Duration::from_secs(60);
        let first = ledger.claim(5, "worker a", ttl).unwrap();
        assert_eq!(first.token, 1, "{name}");
        match ledger.claim(5, "worker b", ttl) {
            Err(LedgerError::Claimed {
                run_id,
                holder,
                expires_at_ms,
                remaining_ms,
            }) => {
                assert_eq!((run_id, holder.as_str()), (5, "worker a"), "{name}");
                assert_eq!(expires_at_ms, first.expires_at_ms, "{name}");
                assert!(remaining_ms > 59_000, "{name}: {remaining_ms}");
            }
            other => panic!("{name}: {other:?}"),
        }
        // Another run is free.
        assert_eq!(ledger.claim(6, "worker b", ttl).unwrap().token, 1, "{name}");
        ledger.release(&first).unwrap();
        let second = ledger.claim(5, "worker b", ttl).unwrap();
        assert_eq!(second.token, 2, "{name}: tokens only grow");
        // The first holder's release after a takeover leaves the new lease.
        ledger.release(&first).unwrap();
        assert!(
            matches!(ledger.claim(5, "worker c", ttl), Err(LedgerError::Claimed { holder, .. }) if holder == "worker b"),
            "{name}"
        );
    }
}

#[tokio::test]
async fn an_expired_lease_is_taken_over_and_its_holders_writes_are_refused() {
    for (name, ledger) in ledgers() {
        let run = cut_run(ledger.clone()).await;
        let records = ledger.records(run).unwrap();
        let old = ledger
            .claim(run, "slow", Duration::from_millis(20))
            .unwrap();
        tokio::time::sleep(Duration::from_millis(40)).await;
        let new = ledger
            .claim(run, "fast", Duration::from_secs(60))
            .expect("an expired lease is taken over");
        assert_eq!(new.token, old.token + 1, "{name}");
        let mut next = records[1].clone();
        next.seq = 2;
        let fenced = LedgerError::Fenced {
            run_id: run,
            token: old.token,
            current: new.token,
        };
        assert_eq!(
            ledger.append_leased(&next, &old),
            Err(fenced.clone()),
            "{name}"
        );
        let call = workflow_core::tool::ToolCallRecord {
            tool: "write".into(),
            index: 0,
            arguments: "7".into(),
            outcome: workflow_core::tool::ToolOutcome::Failed {
                error: ToolError::new("write", "x"),
            },
            attempts: 1,
            duration_us: 0,
            audit: None,
        };
        assert_eq!(
            ledger.append_tool_call_leased(
                run,
                2,
                &workflow_core::ledger::JournalEntry::bind(run, 2, "", call),
                &old
            ),
            Err(fenced.clone()),
            "{name}"
        );
        assert_eq!(ledger.renew(&old), Err(fenced), "{name}");
        assert_eq!(
            ledger.records(run).unwrap(),
            records,
            "{name}: nothing written"
        );
        assert!(ledger.tool_calls(run, 2).unwrap().is_empty(), "{name}");
        // The holder of the newest token writes; a lease of another run does not.
        let mut other = new.clone();
        other.run_id = run + 1;
        assert!(ledger.append_leased(&next, &other).is_err(), "{name}");
        next.hash = next.compute_hash();
        ledger.append_leased(&next, &new).unwrap();
        assert_eq!(ledger.records(run).unwrap().len(), 3, "{name}");
    }
}

#[tokio::test]
async fn two_executors_resuming_one_cut_run_run_its_turn_once_and_one_is_told_who_holds_it() {
    for (name, ledger) in ledgers() {
        let run = cut_run(ledger.clone()).await;
        let writes = Arc::new(AtomicU32::new(0));
        let store = Store {
            writes: writes.clone(),
            pause: Duration::from_millis(20),
            ..Store::default()
        };
        let a = stamp::Workflow::new((), store.clone())
            .with_ledger(ledger.clone())
            .with_holder("executor a");
        let b = stamp::Workflow::new((), store)
            .with_ledger(ledger.clone())
            .with_holder("executor b");
        let (ra, rb) = tokio::join!(a.resume(run), b.resume(run));
        assert_eq!(
            writes.load(Ordering::SeqCst),
            1,
            "{name}: the cut turn ran once"
        );
        let done = ra.unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(done.output, Written { stamp: 701 });
        match rb {
            Err(aborted) => match aborted.error {
                RunError::Ledger(LedgerError::Claimed { holder, run_id, .. }) => {
                    assert_eq!((holder.as_str(), run_id), ("executor a", run), "{name}");
                }
                other => panic!("{name}: {other}"),
            },
            Ok(_) => panic!("{name}: both resumers ran"),
        }
        assert_eq!(ledger.records(run).unwrap().len(), 3, "{name}");
        ledger.verify_run(run).expect(name);
        // Released at the end: a later resume gives the output back at once.
        let again = b
            .resume(run)
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(again.output, Written { stamp: 701 });
        assert_eq!(writes.load(Ordering::SeqCst), 1, "{name}");
    }
}

#[tokio::test]
async fn a_resumer_whose_lease_was_taken_over_cannot_commit_its_turn() {
    for (name, ledger) in ledgers() {
        let run = cut_run(ledger.clone()).await;
        let gate = Arc::new(tokio::sync::Notify::new());
        let writes = Arc::new(AtomicU32::new(0));
        let slow = stamp::Workflow::new(
            (),
            Store {
                writes: writes.clone(),
                gate: Some(gate.clone()),
                ..Store::default()
            },
        )
        .with_ledger(ledger.clone())
        .with_holder("slow")
        .with_lease_ttl(Duration::from_millis(20));
        let fast = stamp::Workflow::new(
            (),
            Store {
                writes: writes.clone(),
                ..Store::default()
            },
        )
        .with_ledger(ledger.clone())
        .with_holder("fast");
        let takeover = async {
            // The slow resumer holds the run, its write waits past its term.
            tokio::time::sleep(Duration::from_millis(60)).await;
            let done = fast.resume(run).await;
            gate.notify_one();
            done
        };
        let (slow_done, fast_done) = tokio::join!(slow.resume(run), takeover);
        let fast_done = fast_done.unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(fast_done.output, Written { stamp: 702 }, "{name}");
        let error = slow_done.expect_err("the slow resumer cannot commit").error;
        assert!(
            matches!(
                error,
                RunError::Ledger(LedgerError::Fenced { run_id, token: 2, current: 3 }) if run_id == run
            ),
            "{name}: {error:?}"
        );
        assert_eq!(
            writes.load(Ordering::SeqCst),
            2,
            "{name}: both ran the write"
        );
        let records = ledger.records(run).unwrap();
        assert_eq!(records.len(), 3, "{name}: the fast resumer's end only");
        assert_eq!(records[2].payload_json().unwrap(), r#"{"stamp":702}"#);
        ledger.verify_run(run).expect(name);
        let journal = ledger.tool_calls(run, 2).unwrap();
        assert_eq!(journal.len(), 1, "{name}: the fast resumer's call only");
        assert!(
            matches!(&journal[0].call.outcome, workflow_core::tool::ToolOutcome::Ok { result, .. } if result.contains("702")),
            "{name}: {:?}",
            journal[0].call.outcome
        );
    }
}

/// A ledger that keeps no leases (the trait's defaults).
struct NoLeases(MemoryLedger);

impl Ledger for NoLeases {
    fn append(&self, record: &workflow_core::ledger::LedgerRecord) -> Result<(), LedgerError> {
        self.0.append(record)
    }
    fn records(
        &self,
        run_id: u64,
    ) -> Result<Vec<workflow_core::ledger::LedgerRecord>, LedgerError> {
        self.0.records(run_id)
    }
    fn runs(&self) -> Result<Vec<u64>, LedgerError> {
        self.0.runs()
    }
    fn head(&self, run_id: u64) -> Result<Option<(u32, String)>, LedgerError> {
        self.0.head(run_id)
    }
}

#[tokio::test]
async fn a_ledger_that_keeps_no_leases_grants_every_claim_unfenced() {
    let ledger = NoLeases(MemoryLedger::new());
    let ttl = Duration::from_secs(1);
    assert_eq!(ledger.claim(1, "a", ttl).unwrap(), Lease::unfenced(1, "a"));
    assert_eq!(ledger.claim(1, "b", ttl).unwrap().token, 0);
    assert_eq!(ledger.lease(1).unwrap(), None);
}

#[tokio::test]
async fn a_fresh_run_holds_its_lease_from_its_first_record_and_releases_it_at_the_end() {
    for (name, ledger) in ledgers() {
        let wf = stamp::Workflow::new((), Store::default())
            .with_ledger(ledger.clone())
            .with_holder("fresh");
        let done = wf.run(3).await.unwrap();
        let row = ledger
            .lease(done.transcript.run_id())
            .unwrap()
            .expect("a lease row");
        assert_eq!(
            (row.holder.as_str(), row.token, row.expires_at_ms),
            ("fresh", 1, 0),
            "{name}"
        );
    }
}
