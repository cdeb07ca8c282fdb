//! Records in an embedded SQLite file (feature `sqlite`).

use std::path::Path;
use std::sync::Mutex;

use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};

use super::{Lease, LeaseRow, Ledger, LedgerError, LedgerRecord, ToolCallRecord};
use super::{decide_claim, decide_write, now_ms, same_run};

/// Records in an embedded SQLite file (bundled SQLite: nothing to
/// install). Each append is one transaction, committed before it returns
/// (`synchronous = FULL`, write-ahead log).
pub struct SqliteLedger {
    conn: Mutex<Connection>,
    /// The `synchronous` setting of every commit but a lease's release.
    synchronous: &'static str,
}

/// What a committed record survives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// A crash of the machine or a power loss: every commit is synced
    /// to disk (`synchronous = FULL`). The default.
    #[default]
    MachineCrash,
    /// A crash or kill of the process, not of the machine: commits reach
    /// the operating system at once and the disk at checkpoints
    /// (`synchronous = NORMAL`); about four times faster.
    ProcessCrash,
}

fn storage(e: impl std::fmt::Display) -> LedgerError {
    LedgerError::Storage(e.to_string())
}

impl SqliteLedger {
    /// Opens (creating if needed) the ledger file at `path`, durable
    /// against a machine crash.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, LedgerError> {
        Self::open_with(path, Durability::MachineCrash)
    }

    /// Opens the ledger file at `path` with the given durability.
    pub fn open_with(path: impl AsRef<Path>, durability: Durability) -> Result<Self, LedgerError> {
        let conn = Connection::open(path).map_err(storage)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(storage)?;
        Self::init(conn, durability)
    }

    /// A ledger in memory, with the same SQL as a file.
    pub fn in_memory() -> Result<Self, LedgerError> {
        Self::init(
            Connection::open_in_memory().map_err(storage)?,
            Durability::MachineCrash,
        )
    }

    fn init(conn: Connection, durability: Durability) -> Result<Self, LedgerError> {
        let synchronous = match durability {
            Durability::MachineCrash => "FULL",
            Durability::ProcessCrash => "NORMAL",
        };
        conn.pragma_update(None, "synchronous", synchronous)
            .map_err(storage)?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS records (
                 run_id INTEGER NOT NULL,
                 seq INTEGER NOT NULL,
                 record TEXT NOT NULL,
                 PRIMARY KEY (run_id, seq)
             );
             CREATE TABLE IF NOT EXISTS heads (
                 run_id INTEGER PRIMARY KEY,
                 seq INTEGER NOT NULL,
                 hash TEXT NOT NULL
             );
             CREATE TABLE IF NOT EXISTS tool_calls (
                 run_id INTEGER NOT NULL,
                 turn_seq INTEGER NOT NULL,
                 idx INTEGER NOT NULL,
                 call TEXT NOT NULL,
                 PRIMARY KEY (run_id, turn_seq, idx)
             );
             CREATE TABLE IF NOT EXISTS leases (
                 run_id INTEGER PRIMARY KEY,
                 holder TEXT NOT NULL,
                 token INTEGER NOT NULL,
                 expires_at_ms INTEGER NOT NULL
             );",
        )
        .map_err(storage)?;
        Ok(SqliteLedger {
            conn: Mutex::new(conn),
            synchronous,
        })
    }

    fn conn(&self) -> Result<std::sync::MutexGuard<'_, Connection>, LedgerError> {
        self.conn
            .lock()
            .map_err(|_| LedgerError::Storage("the ledger's connection lock was poisoned".into()))
    }
}

// SQLite integers are i64; run ids are u64 stored bit for bit.
fn id(run_id: u64) -> i64 {
    run_id as i64
}

/// Stores `record` and moves its run's head, inside `tx`.
fn insert_record(tx: &Transaction<'_>, record: &LedgerRecord) -> Result<(), LedgerError> {
    let json = serde_json::to_string(record).map_err(storage)?;
    let inserted = tx
        .execute(
            "INSERT OR IGNORE INTO records (run_id, seq, record) VALUES (?1, ?2, ?3)",
            params![id(record.run_id), record.seq, json],
        )
        .map_err(storage)?;
    if inserted == 0 {
        return Err(LedgerError::Duplicate {
            run_id: record.run_id,
            seq: record.seq,
        });
    }
    tx.execute(
        "INSERT OR REPLACE INTO heads (run_id, seq, hash) VALUES (?1, ?2, ?3)",
        params![id(record.run_id), record.seq, record.hash],
    )
    .map_err(storage)?;
    Ok(())
}

/// Journals `call` inside `tx`.
fn insert_tool_call(
    tx: &Transaction<'_>,
    run_id: u64,
    turn_seq: u32,
    call: &ToolCallRecord,
) -> Result<(), LedgerError> {
    let json = serde_json::to_string(call).map_err(storage)?;
    tx.execute(
        "INSERT OR REPLACE INTO tool_calls (run_id, turn_seq, idx, call) VALUES (?1, ?2, ?3, ?4)",
        params![id(run_id), turn_seq, call.index, json],
    )
    .map_err(storage)?;
    Ok(())
}

/// The lease row of `run_id`, inside `tx`.
fn lease_row(tx: &Connection, run_id: u64) -> Result<Option<LeaseRow>, LedgerError> {
    tx.query_row(
        "SELECT holder, token, expires_at_ms FROM leases WHERE run_id = ?1",
        params![id(run_id)],
        |row| {
            Ok(LeaseRow {
                holder: row.get(0)?,
                // Stored bit for bit, like run ids.
                token: row.get::<_, i64>(1)? as u64,
                expires_at_ms: row.get::<_, i64>(2)? as u64,
            })
        },
    )
    .optional()
    .map_err(storage)
}

/// Stores `row` as the lease of `run_id`, inside `tx`.
fn put_lease(tx: &Transaction<'_>, run_id: u64, row: &LeaseRow) -> Result<(), LedgerError> {
    tx.execute(
        "INSERT OR REPLACE INTO leases (run_id, holder, token, expires_at_ms) VALUES (?1, ?2, ?3, ?4)",
        params![
            id(run_id),
            row.holder,
            row.token as i64,
            row.expires_at_ms.min(i64::MAX as u64) as i64
        ],
    )
    .map_err(storage)?;
    Ok(())
}

impl SqliteLedger {
    /// Runs `write` in one IMMEDIATE transaction (the write lock taken
    /// first, so no other connection or process can claim the run between
    /// the check and the write) if `lease` still holds its run, renewing it.
    fn leased(
        &self,
        run_id: u64,
        lease: &Lease,
        write: impl FnOnce(&Transaction<'_>) -> Result<(), LedgerError>,
    ) -> Result<(), LedgerError> {
        same_run(lease, run_id)?;
        let mut conn = self.conn()?;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(storage)?;
        let row = decide_write(lease, lease_row(&tx, run_id)?.as_ref(), now_ms())?;
        write(&tx)?;
        if let Some(row) = row {
            put_lease(&tx, run_id, &row)?;
        }
        tx.commit().map_err(storage)
    }
}

impl Ledger for SqliteLedger {
    fn append(&self, record: &LedgerRecord) -> Result<(), LedgerError> {
        let mut conn = self.conn()?;
        let tx = conn.transaction().map_err(storage)?;
        insert_record(&tx, record)?;
        tx.commit().map_err(storage)
    }

    fn claim(
        &self,
        run_id: u64,
        holder: &str,
        ttl: std::time::Duration,
    ) -> Result<Lease, LedgerError> {
        let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
        let mut conn = self.conn()?;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(storage)?;
        let lease = decide_claim(
            run_id,
            lease_row(&tx, run_id)?.as_ref(),
            holder,
            ttl_ms,
            now_ms(),
        )?;
        let row = LeaseRow {
            holder: lease.holder.clone(),
            token: lease.token,
            expires_at_ms: lease.expires_at_ms,
        };
        put_lease(&tx, run_id, &row)?;
        tx.commit().map_err(storage)?;
        Ok(lease)
    }

    fn append_leased(&self, record: &LedgerRecord, lease: &Lease) -> Result<(), LedgerError> {
        self.leased(record.run_id, lease, |tx| insert_record(tx, record))
    }

    fn append_tool_call_leased(
        &self,
        run_id: u64,
        turn_seq: u32,
        call: &ToolCallRecord,
        lease: &Lease,
    ) -> Result<(), LedgerError> {
        self.leased(run_id, lease, |tx| {
            insert_tool_call(tx, run_id, turn_seq, call)
        })
    }

    fn renew(&self, lease: &Lease) -> Result<(), LedgerError> {
        let mut conn = self.conn()?;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(storage)?;
        let now = now_ms();
        decide_write(lease, lease_row(&tx, lease.run_id)?.as_ref(), now)?;
        let row = LeaseRow {
            holder: lease.holder.clone(),
            token: lease.token,
            expires_at_ms: now.saturating_add(lease.ttl_ms),
        };
        put_lease(&tx, lease.run_id, &row)?;
        tx.commit().map_err(storage)
    }

    fn release(&self, lease: &Lease) -> Result<(), LedgerError> {
        // Only the holder's own lease; a lost release merely lets the lease
        // run to its term, so it need not wait for the disk.
        let conn = self.conn()?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(storage)?;
        let released = conn
            .execute(
                "UPDATE leases SET expires_at_ms = 0 WHERE run_id = ?1 AND token = ?2 AND expires_at_ms <> 0",
                params![id(lease.run_id), lease.token as i64],
            )
            .map_err(storage);
        // Back to the ledger's setting before anything else is committed.
        conn.pragma_update(None, "synchronous", self.synchronous)
            .map_err(storage)?;
        released.map(drop)
    }

    fn lease(&self, run_id: u64) -> Result<Option<LeaseRow>, LedgerError> {
        lease_row(&*self.conn()?, run_id)
    }

    fn records(&self, run_id: u64) -> Result<Vec<LedgerRecord>, LedgerError> {
        let conn = self.conn()?;
        let mut stmt = conn
            .prepare("SELECT seq, record FROM records WHERE run_id = ?1 ORDER BY seq")
            .map_err(storage)?;
        let rows = stmt
            .query_map(params![id(run_id)], |row| {
                Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?))
            })
            .map_err(storage)?;
        let mut records = Vec::new();
        for row in rows {
            let (seq, json) = row.map_err(storage)?;
            let record: LedgerRecord = serde_json::from_str(&json)
                .map_err(|e| LedgerError::Corrupt(format!("run {run_id} #{seq}: {e}")))?;
            // The row's key is not hashed: a key moved away from the record
            // it files (the last one's, say) is found here, not on resume.
            if seq != i64::from(record.seq) || id(record.run_id) != id(run_id) {
                return Err(LedgerError::Corrupt(format!(
                    "run {run_id} #{seq}: the row is filed as run {run_id} #{seq} but holds run {} #{}",
                    record.run_id, record.seq
                )));
            }
            records.push(record);
        }
        Ok(records)
    }

    fn runs(&self) -> Result<Vec<u64>, LedgerError> {
        let conn = self.conn()?;
        let mut stmt = conn
            .prepare("SELECT DISTINCT run_id FROM records")
            .map_err(storage)?;
        let rows = stmt
            .query_map([], |row| row.get::<_, i64>(0))
            .map_err(storage)?;
        let mut runs = Vec::new();
        for row in rows {
            runs.push(row.map_err(storage)? as u64);
        }
        runs.sort_unstable();
        Ok(runs)
    }

    fn head(&self, run_id: u64) -> Result<Option<(u32, String)>, LedgerError> {
        let conn = self.conn()?;
        conn.query_row(
            "SELECT seq, hash FROM heads WHERE run_id = ?1",
            params![id(run_id)],
            |row| Ok((row.get::<_, u32>(0)?, row.get::<_, String>(1)?)),
        )
        .optional()
        .map_err(storage)
    }

    fn append_tool_call(
        &self,
        run_id: u64,
        turn_seq: u32,
        call: &ToolCallRecord,
    ) -> Result<(), LedgerError> {
        let mut conn = self.conn()?;
        let tx = conn.transaction().map_err(storage)?;
        insert_tool_call(&tx, run_id, turn_seq, call)?;
        tx.commit().map_err(storage)
    }

    fn tool_calls(&self, run_id: u64, turn_seq: u32) -> Result<Vec<ToolCallRecord>, LedgerError> {
        let conn = self.conn()?;
        let mut stmt = conn
            .prepare(
                "SELECT idx, call FROM tool_calls WHERE run_id = ?1 AND turn_seq = ?2 ORDER BY idx",
            )
            .map_err(storage)?;
        let rows = stmt
            .query_map(params![id(run_id), turn_seq], |row| {
                Ok((row.get::<_, u32>(0)?, row.get::<_, String>(1)?))
            })
            .map_err(storage)?;
        let mut calls = Vec::new();
        for row in rows {
            let (idx, json) = row.map_err(storage)?;
            let call: ToolCallRecord = serde_json::from_str(&json).map_err(|e| {
                LedgerError::Corrupt(format!("run {run_id} turn #{turn_seq} call {idx}: {e}"))
            })?;
            calls.push(call);
        }
        Ok(calls)
    }
}
