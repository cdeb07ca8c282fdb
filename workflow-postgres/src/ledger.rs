//! `PostgresLedger`: the `Ledger` methods as SQL.

use std::sync::Arc;
use workflow_core::ledger::{Ledger, LedgerError, LedgerRecord};

use workflow_core::ledger::{JournalEntry, Lease, LeaseRow};

use crate::OpenError;
use crate::connection::{Connection, describe};
use crate::lease;
use crate::schema::{self, Mode};

/// Records, heads and the tool-call journal in a PostgreSQL database.
///
/// Each append is one transaction (the record and its run's head), committed
/// before it returns. Calls go to the ledger's own connection thread (see
/// the [crate docs](crate)), so it can be used from any tokio runtime or
/// none; share one behind an `Arc`.
pub struct PostgresLedger {
    pub(crate) conn: Arc<Connection>,
}

pub(crate) fn storage(e: postgres::Error) -> LedgerError {
    LedgerError::Storage(format!("PostgreSQL: {}", describe(&e)))
}

pub(crate) fn unencodable(e: serde_json::Error) -> LedgerError {
    LedgerError::Storage(format!("cannot encode for PostgreSQL: {e}"))
}

// PostgreSQL has no unsigned integers: run ids are u64 stored bit for bit
// in a BIGINT; sequence numbers and indices are u32, held whole.
pub(crate) fn id(run_id: u64) -> i64 {
    run_id as i64
}

fn seq(value: i64, what: &str) -> Result<u32, LedgerError> {
    u32::try_from(value)
        .map_err(|_| LedgerError::Corrupt(format!("{what} {value} is out of range")))
}

impl PostgresLedger {
    /// Connects to the database at `url` (a `postgres://` URL or a
    /// `key=value` string, without TLS) and checks its ledger schema:
    /// an empty database gets the current [`SCHEMA_VERSION`](crate::SCHEMA_VERSION),
    /// a newer or unknown one is refused and left as it is.
    pub fn connect(url: &str) -> Result<Self, OpenError> {
        let conn = Connection::open(url)?;
        conn.call(|client| schema::check(client, Mode::Create))?;
        Ok(PostgresLedger {
            conn: Arc::new(conn),
        })
    }

    /// Connects to an existing ledger to read it: nothing is created or
    /// migrated (a database without a ledger is [`OpenError::NoLedger`], an
    /// older one [`OpenError::OlderSchema`]), and the session is read-only,
    /// so every append is refused by the server.
    pub fn connect_read_only(url: &str) -> Result<Self, OpenError> {
        let conn = Connection::open(url)?;
        conn.call(|client| {
            schema::check(client, Mode::ReadOnly)?;
            client
                .batch_execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
                .map_err(|e| OpenError::Storage(describe(&e)))
        })?;
        Ok(PostgresLedger {
            conn: Arc::new(conn),
        })
    }
}

impl Ledger for PostgresLedger {
    fn append(&self, record: &LedgerRecord) -> Result<(), LedgerError> {
        append(&self.conn, record, None)
    }

    fn records(&self, run_id: u64) -> Result<Vec<LedgerRecord>, LedgerError> {
        self.conn.call(move |client| {
            let rows = client
                .query(
                    "SELECT seq, record FROM workflow_records WHERE run_id = $1 ORDER BY seq",
                    &[&id(run_id)],
                )
                .map_err(storage)?;
            rows.iter()
                .map(|row| {
                    let stored: i64 = row.get(0);
                    let json: &str = row.get(1);
                    let seq = u32::try_from(stored).map_err(|_| LedgerError::CorruptRecord {
                        run_id,
                        seq: u32::MAX,
                        why: format!("its stored sequence number {stored} is not one"),
                    })?;
                    // Read strictly and checked against its key, as on SQLite.
                    LedgerRecord::from_stored(run_id, seq, json)
                })
                .collect()
        })
    }

    fn runs(&self) -> Result<Vec<u64>, LedgerError> {
        self.conn.call(|client| {
            let rows = client
                // From the heads too: a run whose records were all removed
                // while its head stayed is listed (and does not verify).
                .query(
                    "SELECT run_id FROM workflow_records UNION SELECT run_id FROM workflow_heads",
                    &[],
                )
                .map_err(storage)?;
            let mut runs: Vec<u64> = rows.iter().map(|row| row.get::<_, i64>(0) as u64).collect();
            // In u64 order, not in the BIGINT order of the bits.
            runs.sort_unstable();
            Ok(runs)
        })
    }

    fn head(&self, run_id: u64) -> Result<Option<(u32, String)>, LedgerError> {
        self.conn.call(move |client| {
            let row = client
                .query_opt(
                    "SELECT seq, hash FROM workflow_heads WHERE run_id = $1",
                    &[&id(run_id)],
                )
                .map_err(storage)?;
            row.map(|row| Ok((seq(row.get(0), "head sequence number")?, row.get(1))))
                .transpose()
        })
    }

    fn append_tool_call(
        &self,
        run_id: u64,
        turn_seq: u32,
        call: &JournalEntry,
    ) -> Result<(), LedgerError> {
        append_tool_call(&self.conn, run_id, turn_seq, call, None)
    }

    fn claim(
        &self,
        run_id: u64,
        holder: &str,
        ttl: std::time::Duration,
    ) -> Result<Lease, LedgerError> {
        let holder = holder.to_owned();
        let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
        self.conn.call(move |client| {
            let mut tx = client.transaction().map_err(storage)?;
            let lease = lease::claim(&mut tx, run_id, &holder, ttl_ms)?;
            tx.commit().map_err(storage)?;
            Ok(lease)
        })
    }

    fn append_leased(&self, record: &LedgerRecord, lease: &Lease) -> Result<(), LedgerError> {
        append(&self.conn, record, Some(lease.clone()))
    }

    fn append_tool_call_leased(
        &self,
        run_id: u64,
        turn_seq: u32,
        call: &JournalEntry,
        lease: &Lease,
    ) -> Result<(), LedgerError> {
        append_tool_call(&self.conn, run_id, turn_seq, call, Some(lease.clone()))
    }

    fn renew(&self, lease: &Lease) -> Result<(), LedgerError> {
        let lease = lease.clone();
        self.conn.call(move |client| {
            let mut tx = client.transaction().map_err(storage)?;
            lease::renew(&mut tx, &lease)?;
            tx.commit().map_err(storage)
        })
    }

    fn release(&self, lease: &Lease) -> Result<(), LedgerError> {
        let lease = lease.clone();
        self.conn.call(move |client| {
            let mut tx = client.transaction().map_err(storage)?;
            lease::release(&mut tx, &lease)?;
            tx.commit().map_err(storage)
        })
    }

    fn lease(&self, run_id: u64) -> Result<Option<LeaseRow>, LedgerError> {
        self.conn.call(move |client| {
            let row = client
                .query_opt(
                    "SELECT holder, token, expires_at_ms FROM workflow_leases WHERE run_id = $1",
                    &[&id(run_id)],
                )
                .map_err(storage)?;
            Ok(row.map(|row| LeaseRow {
                holder: row.get(0),
                token: row.get::<_, i64>(1) as u64,
                expires_at_ms: row.get::<_, i64>(2) as u64,
            }))
        })
    }

    fn append_revocation(
        &self,
        revocation: &workflow_core::StoredRevocation,
    ) -> Result<(), LedgerError> {
        let json = serde_json::to_string(revocation).map_err(unencodable)?;
        let run_id = id(revocation.lease.run_id);
        self.conn.call(move |client| {
            let mut tx = client.transaction().map_err(storage)?;
            // One writer of a run's revocations at a time: the index is
            // the count so far.
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&run_id])
                .map_err(storage)?;
            tx.execute(
                "INSERT INTO workflow_revocations (run_id, idx, revocation)
                 VALUES ($1, (SELECT COUNT(*) FROM workflow_revocations WHERE run_id = $1), $2)",
                &[&run_id, &json],
            )
            .map_err(storage)?;
            tx.commit().map_err(storage)
        })
    }

    fn revocations(
        &self,
        run_id: u64,
    ) -> Result<Vec<workflow_core::StoredRevocation>, LedgerError> {
        self.conn.call(move |client| {
            let rows = client
                .query(
                    "SELECT idx, revocation FROM workflow_revocations
                     WHERE run_id = $1 ORDER BY idx",
                    &[&id(run_id)],
                )
                .map_err(storage)?;
            rows.iter()
                .map(|row| {
                    let idx: i64 = row.get(0);
                    let text: String = row.get(1);
                    let revocation: workflow_core::StoredRevocation = serde_json::from_str(&text)
                        .map_err(|e| {
                        LedgerError::Corrupt(format!("run {run_id} revocation {idx}: {e}"))
                    })?;
                    if revocation.lease.run_id != run_id {
                        return Err(LedgerError::Corrupt(format!(
                            "run {run_id} revocation {idx} names run {}",
                            revocation.lease.run_id
                        )));
                    }
                    Ok(revocation)
                })
                .collect()
        })
    }

    fn tool_calls(&self, run_id: u64, turn_seq: u32) -> Result<Vec<JournalEntry>, LedgerError> {
        self.conn.call(move |client| {
            let rows = client
                .query(
                    "SELECT idx, call FROM workflow_tool_calls
                     WHERE run_id = $1 AND turn_seq = $2 ORDER BY idx",
                    &[&id(run_id), &i64::from(turn_seq)],
                )
                .map_err(storage)?;
            rows.iter()
                .map(|row| {
                    let idx: i64 = row.get(0);
                    let json: &str = row.get(1);
                    JournalEntry::from_stored(json).map_err(|e| {
                        LedgerError::Corrupt(format!(
                            "run {run_id} turn #{turn_seq} call {idx}: {e}"
                        ))
                    })
                })
                .collect()
        })
    }
}

/// Appends `record` and moves its run's head in one transaction; under a
/// `fence` lease, only while that lease still holds the run (renewing it).
pub(crate) fn append(
    conn: &Connection,
    record: &LedgerRecord,
    fence: Option<Lease>,
) -> Result<(), LedgerError> {
    let json = serde_json::to_string(record).map_err(unencodable)?;
    let (run_id, record_seq, hash) = (record.run_id, record.seq, record.hash.clone());
    conn.call(move |client| {
        let mut tx = client.transaction().map_err(storage)?;
        if let Some(lease) = &fence {
            lease::check_write(&mut tx, run_id, lease)?;
        }
        let inserted = tx
            .execute(
                "INSERT INTO workflow_records (run_id, seq, record) VALUES ($1, $2, $3)
                 ON CONFLICT DO NOTHING",
                &[&id(run_id), &i64::from(record_seq), &json],
            )
            .map_err(storage)?;
        if inserted == 0 {
            // Dropping the transaction rolls it back.
            return Err(LedgerError::Duplicate {
                run_id,
                seq: record_seq,
            });
        }
        tx.execute(
            "INSERT INTO workflow_heads (run_id, seq, hash) VALUES ($1, $2, $3)
             ON CONFLICT (run_id) DO UPDATE SET seq = EXCLUDED.seq, hash = EXCLUDED.hash",
            &[&id(run_id), &i64::from(record_seq), &hash],
        )
        .map_err(storage)?;
        tx.commit().map_err(storage)
    })
}

/// Journals `call`; under a `fence` lease, only while that lease still
/// holds the run (renewing it).
pub(crate) fn append_tool_call(
    conn: &Connection,
    run_id: u64,
    turn_seq: u32,
    call: &JournalEntry,
    fence: Option<Lease>,
) -> Result<(), LedgerError> {
    let json = serde_json::to_string(call).map_err(unencodable)?;
    let index = call.call.index;
    conn.call(move |client| {
        let mut tx = client.transaction().map_err(storage)?;
        if let Some(lease) = &fence {
            lease::check_write(&mut tx, run_id, lease)?;
        }
        tx.execute(
            "INSERT INTO workflow_tool_calls (run_id, turn_seq, idx, call)
             VALUES ($1, $2, $3, $4)
             ON CONFLICT (run_id, turn_seq, idx) DO UPDATE SET call = EXCLUDED.call",
            &[&id(run_id), &i64::from(turn_seq), &i64::from(index), &json],
        )
        .map_err(storage)?;
        tx.commit().map_err(storage)
    })
}
