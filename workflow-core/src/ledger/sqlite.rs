//! Records in an embedded SQLite file (feature `sqlite`).

mod format;
mod read_only;
#[cfg(test)]
mod tests;
mod writer;
#[cfg(test)]
mod writer_tests;

use std::path::Path;

use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, params};

pub use format::{LEDGER_APPLICATION_ID, LEDGER_FORMAT};

use super::{JournalEntry, Lease, LeaseRow, Ledger, LedgerError, LedgerRecord};
use super::{decide_claim, decide_write, now_ms, same_run};
pub use writer::CommitCounts;
use writer::Writer;

/// Records in an embedded SQLite file (bundled SQLite: nothing to
/// install). Every append is committed before it returns
/// (`synchronous = FULL`, write-ahead log).
///
/// One thread of the ledger's own owns its connection and commits the
/// appends of concurrent runs together: the appends waiting when it is free
/// go into one transaction and one sync (group commit), each under a
/// savepoint of its own, so that an append refused by its checks (a stale
/// lease, a duplicate) is rolled back alone and the others commit. A caller
/// waits for its own commit without stalling a tokio worker (while others
/// commit, on a multi-thread runtime, inside `tokio::task::block_in_place`;
/// alone, on a current-thread runtime or none, blocking its thread).
///
/// The file is marked as a ledger and carries its format version
/// ([`LEDGER_FORMAT`]); a file that is not a ledger
/// ([`LedgerError::NotALedger`]) or of a newer format
/// ([`LedgerError::UnsupportedVersion`]) is refused, unchanged.
pub struct SqliteLedger {
    writer: Writer,
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

    /// Opens the ledger file at `path` with the given durability, creating
    /// it if needed. An empty file (or an SQLite database with no table)
    /// becomes a ledger; a ledger of an older format is upgraded; anything
    /// else is refused before anything is written to it.
    pub fn open_with(path: impl AsRef<Path>, durability: Durability) -> Result<Self, LedgerError> {
        let path = path.as_ref();
        let mut conn = Connection::open(path).map_err(storage)?;
        // Refuse another application's file before switching its journal.
        let found = format::recognise(&conn, path)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(storage)?;
        if found.needs_upgrade() {
            format::upgrade(&mut conn, path)?;
        }
        Self::init(conn, durability)
    }

    /// Opens the ledger file at `path` for reading only: nothing is ever
    /// written to it, its tables are not created, its format is not
    /// upgraded and its journal mode is not changed; `append` fails.
    ///
    /// A ledger in a read-only file or folder is read too. SQLite reads a
    /// write-ahead-log ledger through its `-wal` and `-shm` files, which
    /// it creates next to the file (holding no commit) when they are
    /// missing; when it cannot (a read-only folder)
    /// and no log is pending (no `-wal` or `-journal` file with content:
    /// every commit is in the main file, and in such a folder no writer can
    /// start one), the file is opened as `immutable`. A pending log that
    /// SQLite cannot read there is an error, never a silent older view.
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Self, LedgerError> {
        let path = path.as_ref();
        let conn = read_only::open(path)?;
        match format::recognise(&conn, path)? {
            // "FULL": never used, nothing is committed through a read-only open.
            format::Found::Ledger { .. } => Ok(SqliteLedger {
                writer: Writer::start(conn, "FULL")?,
            }),
            format::Found::Nothing => Err(LedgerError::NotALedger {
                path: path.to_owned(),
                why: "it holds no table (an empty file or database)".into(),
            }),
        }
    }

    /// A ledger in memory, with the same SQL as a file.
    pub fn in_memory() -> Result<Self, LedgerError> {
        let mut conn = Connection::open_in_memory().map_err(storage)?;
        format::upgrade(&mut conn, Path::new(":memory:"))?;
        Self::init(conn, Durability::MachineCrash)
    }

    fn init(conn: Connection, durability: Durability) -> Result<Self, LedgerError> {
        let synchronous = match durability {
            Durability::MachineCrash => "FULL",
            Durability::ProcessCrash => "NORMAL",
        };
        conn.pragma_update(None, "synchronous", synchronous)
            .map_err(storage)?;
        Ok(SqliteLedger {
            writer: Writer::start(conn, synchronous)?,
        })
    }
}

impl SqliteLedger {
    /// The writes this ledger has committed and the transactions (groups)
    /// it committed them in since it was opened: with concurrent runs,
    /// several writes share one transaction and one sync.
    pub fn commit_counts(&self) -> CommitCounts {
        self.writer.counts()
    }
}

// SQLite integers are i64; run ids are u64 stored bit for bit.
fn id(run_id: u64) -> i64 {
    run_id as i64
}

/// A record ready to be stored: serialized by the caller, so that the
/// writer thread only writes.
struct Row {
    run_id: u64,
    seq: u32,
    hash: String,
    json: String,
}

impl Row {
    fn of(record: &LedgerRecord) -> Result<Row, LedgerError> {
        Ok(Row {
            run_id: record.run_id,
            seq: record.seq,
            hash: record.hash.clone(),
            json: serde_json::to_string(record).map_err(storage)?,
        })
    }
}

/// Stores `row` and moves its run's head, inside the group's transaction.
fn insert_record(tx: &Connection, row: &Row) -> Result<(), LedgerError> {
    let inserted = tx
        .execute(
            "INSERT OR IGNORE INTO records (run_id, seq, record) VALUES (?1, ?2, ?3)",
            params![id(row.run_id), row.seq, row.json],
        )
        .map_err(storage)?;
    if inserted == 0 {
        return Err(LedgerError::Duplicate {
            run_id: row.run_id,
            seq: row.seq,
        });
    }
    tx.execute(
        "INSERT OR REPLACE INTO heads (run_id, seq, hash) VALUES (?1, ?2, ?3)",
        params![id(row.run_id), row.seq, row.hash],
    )
    .map_err(storage)?;
    Ok(())
}

/// A journal entry ready to be stored, serialized by the caller.
struct CallRow {
    run_id: u64,
    turn_seq: u32,
    index: u32,
    json: String,
}

impl CallRow {
    fn of(run_id: u64, turn_seq: u32, entry: &JournalEntry) -> Result<CallRow, LedgerError> {
        Ok(CallRow {
            run_id,
            turn_seq,
            index: entry.call.index,
            json: serde_json::to_string(entry).map_err(storage)?,
        })
    }
}

/// Journals `call` inside the group's transaction.
fn insert_tool_call(tx: &Connection, call: &CallRow) -> Result<(), LedgerError> {
    tx.execute(
        "INSERT OR REPLACE INTO tool_calls (run_id, turn_seq, idx, call) VALUES (?1, ?2, ?3, ?4)",
        params![id(call.run_id), call.turn_seq, call.index, call.json],
    )
    .map_err(storage)?;
    Ok(())
}

/// The lease row of `run_id`.
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

/// Stores `row` as the lease of `run_id`, inside the group's transaction.
fn put_lease(tx: &Connection, run_id: u64, row: &LeaseRow) -> Result<(), LedgerError> {
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
    /// Runs `write` in the writer's next group (whose IMMEDIATE transaction
    /// holds the write lock, so no other connection or process can claim
    /// the run between the check and the write) if `lease` still holds its
    /// run, renewing it; the check and the write roll back together when
    /// either fails.
    fn leased(
        &self,
        run_id: u64,
        lease: &Lease,
        write: impl FnOnce(&Connection) -> Result<(), LedgerError> + Send + 'static,
    ) -> Result<(), LedgerError> {
        same_run(lease, run_id)?;
        let lease = lease.clone();
        self.writer.write(true, move |tx| {
            let row = decide_write(&lease, lease_row(tx, run_id)?.as_ref(), now_ms())?;
            write(tx)?;
            if let Some(row) = row {
                put_lease(tx, run_id, &row)?;
            }
            Ok(())
        })
    }
}

impl Ledger for SqliteLedger {
    fn append(&self, record: &LedgerRecord) -> Result<(), LedgerError> {
        let row = Row::of(record)?;
        self.writer.write(true, move |tx| insert_record(tx, &row))
    }

    fn claim(
        &self,
        run_id: u64,
        holder: &str,
        ttl: std::time::Duration,
    ) -> Result<Lease, LedgerError> {
        let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
        let holder = holder.to_owned();
        self.writer.write(true, move |tx| {
            let lease = decide_claim(
                run_id,
                lease_row(tx, run_id)?.as_ref(),
                &holder,
                ttl_ms,
                now_ms(),
            )?;
            let row = LeaseRow {
                holder: lease.holder.clone(),
                token: lease.token,
                expires_at_ms: lease.expires_at_ms,
            };
            put_lease(tx, run_id, &row)?;
            Ok(lease)
        })
    }

    fn append_leased(&self, record: &LedgerRecord, lease: &Lease) -> Result<(), LedgerError> {
        let row = Row::of(record)?;
        self.leased(record.run_id, lease, move |tx| insert_record(tx, &row))
    }

    fn append_tool_call_leased(
        &self,
        run_id: u64,
        turn_seq: u32,
        call: &JournalEntry,
        lease: &Lease,
    ) -> Result<(), LedgerError> {
        let call = CallRow::of(run_id, turn_seq, call)?;
        self.leased(run_id, lease, move |tx| insert_tool_call(tx, &call))
    }

    fn renew(&self, lease: &Lease) -> Result<(), LedgerError> {
        let lease = lease.clone();
        self.writer.write(true, move |tx| {
            let now = now_ms();
            decide_write(&lease, lease_row(tx, lease.run_id)?.as_ref(), now)?;
            let row = LeaseRow {
                holder: lease.holder.clone(),
                token: lease.token,
                expires_at_ms: now.saturating_add(lease.ttl_ms),
            };
            put_lease(tx, lease.run_id, &row)
        })
    }

    fn release(&self, lease: &Lease) -> Result<(), LedgerError> {
        // Only the holder's own lease; a lost release merely lets the lease
        // run to its term, so it need not wait for the disk (`false`: a
        // group of releases only is committed without a sync).
        let (run_id, token) = (lease.run_id, lease.token);
        self.writer.write(false, move |tx| {
            tx.execute(
                "UPDATE leases SET expires_at_ms = 0 WHERE run_id = ?1 AND token = ?2 AND expires_at_ms <> 0",
                params![id(run_id), token as i64],
            )
            .map(drop)
            .map_err(storage)
        })
    }

    fn lease(&self, run_id: u64) -> Result<Option<LeaseRow>, LedgerError> {
        self.writer.read(move |conn| lease_row(conn, run_id))
    }

    fn append_revocation(
        &self,
        revocation: &crate::spec::StoredRevocation,
    ) -> Result<(), LedgerError> {
        let json = serde_json::to_string(revocation).map_err(storage)?;
        let run_id = id(revocation.lease.run_id);
        // Durable before the caller is told: a revocation acknowledged and
        // then lost would let a revoked lease act again after a restart.
        self.writer.write(true, move |tx| {
            tx.execute(
                "INSERT INTO revocations (run_id, idx, revocation) \
                 VALUES (?1, (SELECT COUNT(*) FROM revocations WHERE run_id = ?1), ?2)",
                params![run_id, json],
            )
            .map(drop)
            .map_err(storage)
        })
    }

    fn revocations(&self, run_id: u64) -> Result<Vec<crate::spec::StoredRevocation>, LedgerError> {
        self.writer.read(move |conn| {
            // A file of an older format opened for reading has no such table:
            // it holds no revocation.
            let has_table: bool = conn
                .query_row(
                    "SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'revocations')",
                    [],
                    |row| row.get(0),
                )
                .map_err(storage)?;
            if !has_table {
                return Ok(Vec::new());
            }
            let mut stmt = conn
                .prepare("SELECT idx, revocation FROM revocations WHERE run_id = ?1 ORDER BY idx")
                .map_err(storage)?;
            let rows = stmt
                .query_map(params![id(run_id)], |row| {
                    Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?))
                })
                .map_err(storage)?;
            let mut revocations = Vec::new();
            for row in rows {
                let (idx, json) = row.map_err(storage)?;
                let revocation: crate::spec::StoredRevocation = crate::encode::from_json_text(&json)
                    .map_err(|e| LedgerError::Corrupt(format!("run {run_id} revocation {idx}: {e}")))?;
                if revocation.lease.run_id != run_id {
                    return Err(LedgerError::Corrupt(format!(
                        "run {run_id} revocation {idx} names run {}",
                        revocation.lease.run_id
                    )));
                }
                revocations.push(revocation);
            }
            Ok(revocations)
        })
    }

    fn records(&self, run_id: u64) -> Result<Vec<LedgerRecord>, LedgerError> {
        self.writer.read(move |conn| {
            let mut stmt = conn
                .prepare("SELECT seq, record FROM records WHERE run_id = ?1 ORDER BY seq")
                .map_err(storage)?;
            let mut rows = stmt.query(params![id(run_id)]).map_err(storage)?;
            let mut records = Vec::new();
            while let Some(row) = rows.next().map_err(storage)? {
                records.push(stored_record(run_id, records.len(), row)?);
            }
            Ok(records)
        })
    }

    fn runs(&self) -> Result<Vec<u64>, LedgerError> {
        self.writer.read(|conn| {
            // A run whose records were all removed keeps its head: listed.
            let mut stmt = conn
                .prepare("SELECT run_id FROM records UNION SELECT run_id FROM heads")
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
        })
    }

    fn head(&self, run_id: u64) -> Result<Option<(u32, String)>, LedgerError> {
        let head = self.writer.read(move |conn| {
            conn.query_row(
                "SELECT seq, hash FROM heads WHERE run_id = ?1",
                params![id(run_id)],
                |row| Ok((Value::from(row.get_ref(0)?), Value::from(row.get_ref(1)?))),
            )
            .optional()
            .map_err(storage)
        })?;
        let Some((seq, hash)) = head else {
            return Ok(None);
        };
        let corrupt = |why: String| LedgerError::CorruptHead { run_id, why };
        let seq = seq_of(&seq).map_err(corrupt)?;
        let hash = text_of(&hash).map_err(corrupt)?;
        Ok(Some((seq, hash)))
    }

    fn append_tool_call(
        &self,
        run_id: u64,
        turn_seq: u32,
        entry: &JournalEntry,
    ) -> Result<(), LedgerError> {
        let call = CallRow::of(run_id, turn_seq, entry)?;
        self.writer
            .write(true, move |tx| insert_tool_call(tx, &call))
    }

    fn tool_calls(&self, run_id: u64, turn_seq: u32) -> Result<Vec<JournalEntry>, LedgerError> {
        let stored = self.writer.read(move |conn| {
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
            rows.collect::<Result<Vec<_>, _>>().map_err(storage)
        })?;
        let mut calls = Vec::with_capacity(stored.len());
        for (idx, json) in stored {
            let entry = JournalEntry::from_stored(&json).map_err(|e| {
                LedgerError::Corrupt(format!("run {run_id} turn #{turn_seq} call {idx}: {e}"))
            })?;
            calls.push(entry);
        }
        Ok(calls)
    }
}

/// The record a row of `records` holds, checked against the row's key: a
/// record stored under a sequence number it does not carry would read as
/// a whole chain and then break every resume.
///
/// `position` is the row's place in the run, which names the record when
/// its stored sequence number does not read.
fn stored_record(
    run_id: u64,
    position: usize,
    row: &rusqlite::Row<'_>,
) -> Result<LedgerRecord, LedgerError> {
    let value = |i| row.get_ref(i).map(Value::from).map_err(storage);
    let (seq, json) = (value(0)?, value(1)?);
    let seq = seq_of(&seq).map_err(|why| LedgerError::CorruptRecord {
        run_id,
        seq: u32::try_from(position).unwrap_or(u32::MAX),
        why: format!("its stored sequence number {why}"),
    })?;
    let json = text_of(&json).map_err(|why| LedgerError::CorruptRecord { run_id, seq, why })?;
    LedgerRecord::from_stored(run_id, seq, &json)
}

/// A sequence number as stored: an integer from 0 to `u32::MAX`.
fn seq_of(value: &Value) -> Result<u32, String> {
    match value {
        Value::Integer(n) => {
            u32::try_from(*n).map_err(|_| format!("is {n}, not a sequence number"))
        }
        other => Err(format!("is {}, not an integer", kind(other))),
    }
}

/// Text as stored.
fn text_of(value: &Value) -> Result<String, String> {
    match value {
        Value::Text(text) => Ok(text.clone()),
        other => Err(format!("it is stored as {}, not text", kind(other))),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "NULL",
        Value::Integer(_) => "an integer",
        Value::Real(_) => "a real number",
        Value::Text(_) => "text",
        Value::Blob(_) => "a blob",
    }
}
