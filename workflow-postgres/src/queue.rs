//! The work queue: runs submitted to the database, claimed by workers with
//! `SELECT ... FOR UPDATE SKIP LOCKED`. A claim is the run's lease, taken
//! by `workflow-core`'s rule ([`decide_claim`](workflow_core::ledger::decide_claim))
//! in the claim's transaction: the same lease, and the same fencing token,
//! that every commit of the run is then checked against
//! ([`Ledger::append_leased`](workflow_core::ledger::Ledger::append_leased)).
//! Submissions, hand-backs and decisions are announced on the channel
//! [`CHANNEL`] (`NOTIFY`), which idle workers `LISTEN` to.

use std::time::Duration;

use workflow_core::Decision;
use workflow_core::ledger::{Lease, LedgerError};

use crate::lease;
use crate::ledger::{PostgresLedger, id, storage, unencodable};

/// The `LISTEN`/`NOTIFY` channel a run that can be claimed is announced on
/// (its run id as the payload).
pub const CHANNEL: &str = "workflow_queue";

/// A run taken from the queue: its lease and what to do with it.
#[derive(Debug, Clone, PartialEq)]
pub struct Claimed {
    /// The lease the run is now held under (its run id, holder, fencing
    /// token and term).
    pub lease: Lease,
    /// The workflow it was submitted for.
    pub workflow: String,
    /// Its input, as submitted (JSON text).
    pub input: String,
    /// A person's decision waiting to be applied (the run was suspended).
    pub decision: Option<Decision>,
}

/// Where a claimed run stands once its holder is done with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settle {
    /// It ended (completed or stopped): never claimed again.
    Done,
    /// It waits for a person's decision ([`PostgresLedger::decide`]).
    Suspended,
    /// Handed back unfinished (a worker shutting down): claimable at once.
    Queued,
}

impl Settle {
    fn state(self) -> &'static str {
        match self {
            Settle::Done => "done",
            Settle::Suspended => "suspended",
            Settle::Queued => "queued",
        }
    }
}

/// How many runs of the queue stand where.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueCounts {
    /// Waiting to be claimed (new, handed back, or decided).
    pub queued: u64,
    /// Held by a worker (or by one that died, until its lease expires).
    pub claimed: u64,
    /// Waiting for a person's decision.
    pub suspended: u64,
    /// Ended.
    pub done: u64,
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl PostgresLedger {
    /// Submits run `run_id` of `workflow` with its `input` (JSON text) to
    /// the queue and announces it: `Ok(false)` when that run was already
    /// submitted (nothing changes).
    pub fn submit(&self, run_id: u64, workflow: &str, input: &str) -> Result<bool, LedgerError> {
        let (workflow, input) = (workflow.to_string(), input.to_string());
        self.conn.call(move |client| {
            let mut tx = client.transaction().map_err(storage)?;
            let inserted = tx
                .execute(
                    "INSERT INTO workflow_queue (run_id, workflow, input) VALUES ($1, $2, $3)
                     ON CONFLICT (run_id) DO NOTHING",
                    &[&id(run_id), &workflow, &input],
                )
                .map_err(storage)?;
            if inserted == 1 {
                notify(&mut tx, run_id)?;
            }
            tx.commit().map_err(storage)?;
            Ok(inserted == 1)
        })
    }

    /// Claims the oldest run of one of `workflows` that is queued, or held
    /// under a lease that has expired (its worker died or stalled), for
    /// `holder` for `ttl`: the run's next lease. Claimers at the same
    /// moment skip each other's rows (`FOR UPDATE SKIP LOCKED`), and the
    /// lease is taken in the same transaction: a run is never held twice.
    /// `None` when nothing is claimable.
    pub fn claim_next(
        &self,
        workflows: &[&str],
        holder: &str,
        ttl: Duration,
    ) -> Result<Option<Claimed>, LedgerError> {
        let workflows: Vec<String> = workflows.iter().map(|w| w.to_string()).collect();
        let holder = holder.to_string();
        let ttl_ms = millis(ttl);
        self.conn.call(move |client| {
            // A run another claimer took between this one's snapshot and its
            // row lock still matches the query once locked (its queue row is
            // re-read, its lease row is not), and its lease then refuses the
            // claim: look again, in a new snapshot that sees that lease.
            for _ in 0..16 {
                match claim_one(client, &workflows, &holder, ttl_ms) {
                    Err(LedgerError::Claimed { .. }) => continue,
                    other => return other,
                }
            }
            Ok(None)
        })
    }

    /// Settles the run of `lease` (done, suspended, or handed back) with a
    /// one-line `outcome`, and releases the lease, if the lease still holds
    /// the run: [`LedgerError::Fenced`] when it was taken over (nothing
    /// changes). A decision that was applied is cleared; a run handed back
    /// keeps it, and is announced.
    pub fn settle(&self, lease: &Lease, settle: Settle, outcome: &str) -> Result<(), LedgerError> {
        let (lease, outcome) = (lease.clone(), outcome.to_string());
        self.conn.call(move |client| {
            let mut tx = client.transaction().map_err(storage)?;
            let (row, _) = lease::lock(&mut tx, lease.run_id)?;
            let current = row.map_or(0, |row| row.token);
            if current != lease.token {
                return Err(LedgerError::Fenced {
                    run_id: lease.run_id,
                    token: lease.token,
                    current,
                });
            }
            let updated = tx
                .execute(
                    "UPDATE workflow_queue SET state = $2, outcome = $3,
                         decision = CASE WHEN $2 = 'queued' THEN decision END
                     WHERE run_id = $1",
                    &[&id(lease.run_id), &settle.state(), &outcome],
                )
                .map_err(storage)?;
            if updated == 0 {
                return Err(LedgerError::Storage(format!(
                    "run {} is not in the queue",
                    lease.run_id
                )));
            }
            lease::release(&mut tx, &lease)?;
            if settle == Settle::Queued {
                notify(&mut tx, lease.run_id)?;
            }
            tx.commit().map_err(storage)
        })
    }

    /// Queues a person's `decision` on suspended run `run_id`, for a worker
    /// to apply, and announces it: `Ok(false)` when the run is not
    /// suspended in the queue or already has a decision waiting (nothing
    /// changes).
    pub fn decide(&self, run_id: u64, decision: &Decision) -> Result<bool, LedgerError> {
        let json = serde_json::to_string(decision).map_err(unencodable)?;
        self.conn.call(move |client| {
            let mut tx = client.transaction().map_err(storage)?;
            let updated = tx
                .execute(
                    "UPDATE workflow_queue SET state = 'queued', decision = $2
                     WHERE run_id = $1 AND state = 'suspended' AND decision IS NULL",
                    &[&id(run_id), &json],
                )
                .map_err(storage)?;
            if updated == 1 {
                notify(&mut tx, run_id)?;
            }
            tx.commit().map_err(storage)?;
            Ok(updated == 1)
        })
    }

    /// How many runs of the queue stand where.
    pub fn queue_counts(&self) -> Result<QueueCounts, LedgerError> {
        self.conn.call(|client| {
            let rows = client
                .query(
                    "SELECT state, count(*) FROM workflow_queue GROUP BY state",
                    &[],
                )
                .map_err(storage)?;
            let mut counts = QueueCounts::default();
            for row in rows {
                let n = row.get::<_, i64>(1) as u64;
                match row.get::<_, &str>(0) {
                    "queued" => counts.queued = n,
                    "claimed" => counts.claimed = n,
                    "suspended" => counts.suspended = n,
                    _ => counts.done = n,
                }
            }
            Ok(counts)
        })
    }

    /// How many runs of `workflows` are queued or held: work still to do
    /// (runs that ended or wait for a decision are not counted).
    pub fn pending(&self, workflows: &[&str]) -> Result<u64, LedgerError> {
        let workflows: Vec<String> = workflows.iter().map(|w| w.to_string()).collect();
        self.conn.call(move |client| {
            let row = client
                .query_one(
                    "SELECT count(*) FROM workflow_queue
                     WHERE state IN ('queued', 'claimed') AND workflow = ANY($1)",
                    &[&workflows],
                )
                .map_err(storage)?;
            Ok(row.get::<_, i64>(0) as u64)
        })
    }

    /// The one-line outcome a worker settled run `run_id` with, if any.
    pub fn outcome(&self, run_id: u64) -> Result<Option<String>, LedgerError> {
        self.conn.call(move |client| {
            let row = client
                .query_opt(
                    "SELECT outcome FROM workflow_queue WHERE run_id = $1",
                    &[&id(run_id)],
                )
                .map_err(storage)?;
            Ok(row.and_then(|row| row.get(0)))
        })
    }
}

/// One attempt of [`PostgresLedger::claim_next`], in its own transaction.
fn claim_one(
    client: &mut postgres::Client,
    workflows: &[String],
    holder: &str,
    ttl_ms: u64,
) -> Result<Option<Claimed>, LedgerError> {
    let mut tx = client.transaction().map_err(storage)?;
    let row = tx
        .query_opt(
            "SELECT q.run_id, q.workflow, q.input, q.decision
             FROM workflow_queue q
             LEFT JOIN workflow_leases l ON l.run_id = q.run_id
             WHERE q.state IN ('queued', 'claimed') AND q.workflow = ANY($1)
               AND (l.run_id IS NULL OR l.expires_at_ms
                    <= (extract(epoch FROM clock_timestamp()) * 1000)::bigint)
             ORDER BY q.submitted_at, q.run_id
             LIMIT 1
             FOR UPDATE OF q SKIP LOCKED",
            &[&workflows],
        )
        .map_err(storage)?;
    let Some(row) = row else {
        return Ok(None);
    };
    let run_id = row.get::<_, i64>(0) as u64;
    let decision = row
        .get::<_, Option<String>>(3)
        .map(|json| {
            serde_json::from_str::<Decision>(&json).map_err(|e| {
                LedgerError::Corrupt(format!("run {run_id}: the queued decision: {e}"))
            })
        })
        .transpose()?;
    // Dropping the transaction on an error rolls it back.
    let lease = lease::claim(&mut tx, run_id, holder, ttl_ms)?;
    tx.execute(
        "UPDATE workflow_queue SET state = 'claimed' WHERE run_id = $1",
        &[&id(run_id)],
    )
    .map_err(storage)?;
    tx.commit().map_err(storage)?;
    Ok(Some(Claimed {
        lease,
        workflow: row.get(1),
        input: row.get(2),
        decision,
    }))
}

/// Announces `run_id` on [`CHANNEL`] when `tx` commits.
fn notify(tx: &mut postgres::Transaction<'_>, run_id: u64) -> Result<(), LedgerError> {
    tx.execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &run_id.to_string()])
        .map_err(storage)?;
    Ok(())
}
