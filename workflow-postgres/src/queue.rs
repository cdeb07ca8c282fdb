//! The work queue (groundwork of issue 17, part 2): runs submitted to the
//! database, claimed by workers with `SELECT ... FOR UPDATE SKIP LOCKED`,
//! each claim a lease with a fencing token that every write made under it
//! checks in its own transaction.

use std::sync::Arc;
use std::time::Duration;

use postgres::Client;
use workflow_core::ledger::JournalEntry;
use workflow_core::ledger::{Ledger, LedgerError, LedgerRecord};

use crate::connection::Connection;
use crate::ledger::{self, PostgresLedger, id, storage};

/// A claim on a run: held by `holder` until it expires, unless renewed
/// ([`PostgresLedger::heartbeat`]). A later claim of the same run (after
/// expiry) takes a higher `token`, and from then on every write made under
/// this lease is refused with [`LedgerError::Fenced`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The run.
    pub run_id: u64,
    /// The workflow it was submitted for.
    pub workflow: String,
    /// Its input, as submitted (JSON text).
    pub input: String,
    /// Who holds it (a worker's name).
    pub holder: String,
    /// The fencing token: increases with every claim of the run.
    pub token: u64,
}

/// The `Ledger` a worker runs a claimed run with: reads as the ledger does;
/// every append and journal entry commits only while the lease's token is
/// still the run's (checked inside the write's transaction, the queue row
/// locked until it commits).
pub struct FencedLedger {
    conn: Arc<Connection>,
    lease: Lease,
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// The error for a write under `token` that matched no row: the run's token
/// moved on (or the run is not in the queue: token 0).
fn fenced(client: &mut Client, run_id: u64, token: u64) -> LedgerError {
    match client.query_opt(
        "SELECT token FROM workflow_queue WHERE run_id = $1",
        &[&id(run_id)],
    ) {
        Ok(row) => LedgerError::Fenced {
            run_id,
            token,
            current: row.map_or(0, |row| row.get::<_, i64>(0) as u64),
        },
        Err(e) => storage(e),
    }
}

impl PostgresLedger {
    /// Submits run `run_id` of `workflow` with its `input` (JSON text) to
    /// the queue: `Ok(false)` when that run was already submitted (nothing
    /// changes).
    pub fn submit(&self, run_id: u64, workflow: &str, input: &str) -> Result<bool, LedgerError> {
        let (workflow, input) = (workflow.to_string(), input.to_string());
        self.conn.call(move |client| {
            let inserted = client
                .execute(
                    "INSERT INTO workflow_queue (run_id, workflow, input) VALUES ($1, $2, $3)
                     ON CONFLICT (run_id) DO NOTHING",
                    &[&id(run_id), &workflow, &input],
                )
                .map_err(storage)?;
            Ok(inserted == 1)
        })
    }

    /// Claims the oldest run that is queued or whose lease has expired, for
    /// `holder`, until `lease` from now (the server's clock): its next
    /// fencing token. Claimers at the same moment skip each other's rows
    /// (`FOR UPDATE SKIP LOCKED`): a run is never claimed twice at once.
    /// `None` when nothing is claimable.
    pub fn claim(&self, holder: &str, lease: Duration) -> Result<Option<Lease>, LedgerError> {
        let holder = holder.to_string();
        self.conn.call(move |client| {
            let row = client
                .query_opt(
                    "UPDATE workflow_queue q
                     SET state = 'claimed', holder = $1, token = q.token + 1,
                         lease_until = clock_timestamp() + $2::bigint * interval '1 millisecond'
                     WHERE q.run_id = (
                         SELECT run_id FROM workflow_queue
                         WHERE state = 'queued'
                            OR (state = 'claimed' AND lease_until < clock_timestamp())
                         ORDER BY submitted_at, run_id
                         LIMIT 1
                         FOR UPDATE SKIP LOCKED)
                     RETURNING q.run_id, q.workflow, q.input, q.token",
                    &[&holder, &millis(lease)],
                )
                .map_err(storage)?;
            Ok(row.map(|row| Lease {
                run_id: row.get::<_, i64>(0) as u64,
                workflow: row.get(1),
                input: row.get(2),
                holder,
                token: row.get::<_, i64>(3) as u64,
            }))
        })
    }

    /// Renews `lease` until `extend` from now; [`LedgerError::Fenced`] when
    /// the run was claimed by someone else since (or finished).
    pub fn heartbeat(&self, lease: &Lease, extend: Duration) -> Result<(), LedgerError> {
        let (run_id, token) = (lease.run_id, lease.token);
        self.conn.call(move |client| {
            let updated = client
                .execute(
                    "UPDATE workflow_queue
                     SET lease_until = clock_timestamp() + $3::bigint * interval '1 millisecond'
                     WHERE run_id = $1 AND token = $2 AND state = 'claimed'",
                    &[&id(run_id), &(token as i64), &millis(extend)],
                )
                .map_err(storage)?;
            if updated == 1 {
                Ok(())
            } else {
                Err(fenced(client, run_id, token))
            }
        })
    }

    /// Marks the run of `lease` done (never claimed again), if the lease
    /// still holds it.
    pub fn finish(&self, lease: &Lease) -> Result<(), LedgerError> {
        self.settle(lease, "done")
    }

    /// Hands the run of `lease` back to the queue (a worker shutting
    /// down), if the lease still holds it.
    pub fn release(&self, lease: &Lease) -> Result<(), LedgerError> {
        self.settle(lease, "queued")
    }

    fn settle(&self, lease: &Lease, state: &'static str) -> Result<(), LedgerError> {
        let (run_id, token) = (lease.run_id, lease.token);
        self.conn.call(move |client| {
            let updated = client
                .execute(
                    "UPDATE workflow_queue SET state = $3, holder = NULL, lease_until = NULL
                     WHERE run_id = $1 AND token = $2 AND state = 'claimed'",
                    &[&id(run_id), &(token as i64), &state],
                )
                .map_err(storage)?;
            if updated == 1 {
                Ok(())
            } else {
                Err(fenced(client, run_id, token))
            }
        })
    }

    /// The ledger to run the run of `lease` with: its writes are fenced by
    /// the lease's token. It shares this ledger's connection.
    pub fn fenced(&self, lease: Lease) -> FencedLedger {
        FencedLedger {
            conn: self.conn.clone(),
            lease,
        }
    }
}

impl FencedLedger {
    /// The lease its writes are made under.
    pub fn lease(&self) -> &Lease {
        &self.lease
    }

    fn reader(&self) -> PostgresLedger {
        PostgresLedger {
            conn: self.conn.clone(),
        }
    }

    /// Refuses a write to another run than the lease's: the lease fences
    /// only its own run.
    fn own(&self, run_id: u64) -> Result<(), LedgerError> {
        if run_id == self.lease.run_id {
            Ok(())
        } else {
            Err(LedgerError::Fenced {
                run_id,
                token: self.lease.token,
                current: 0,
            })
        }
    }
}

impl Ledger for FencedLedger {
    fn append(&self, record: &LedgerRecord) -> Result<(), LedgerError> {
        self.own(record.run_id)?;
        ledger::append(&self.conn, record, Some(self.lease.token))
    }

    fn records(&self, run_id: u64) -> Result<Vec<LedgerRecord>, LedgerError> {
        self.reader().records(run_id)
    }

    fn runs(&self) -> Result<Vec<u64>, LedgerError> {
        self.reader().runs()
    }

    fn head(&self, run_id: u64) -> Result<Option<(u32, String)>, LedgerError> {
        self.reader().head(run_id)
    }

    fn append_tool_call(
        &self,
        run_id: u64,
        turn_seq: u32,
        call: &JournalEntry,
    ) -> Result<(), LedgerError> {
        self.own(run_id)?;
        ledger::append_tool_call(&self.conn, run_id, turn_seq, call, Some(self.lease.token))
    }

    fn tool_calls(&self, run_id: u64, turn_seq: u32) -> Result<Vec<JournalEntry>, LedgerError> {
        self.reader().tool_calls(run_id, turn_seq)
    }
}
