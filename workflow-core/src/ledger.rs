//! Durable, hash-chained transfer records (guarantee 11).
//!
//! With a [`Ledger`] attached (`Executor::with_ledger`), the executor
//! commits every transfer once its receipt is decided, before the receiver's
//! body runs, and the `END` transfer before the run returns. Each record
//! carries the hash of the one before it, so [`verify`] finds any record that
//! was edited, removed, reordered or cut off.
//!
//! [`MemoryLedger`] keeps records in memory (tests); `SqliteLedger` (feature
//! `sqlite`) keeps them in an embedded SQLite file, nothing to install.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Mutex;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::record::{Endpoint, Receipt};
use crate::tool::ToolCallRecord;

/// How a record's payload bytes are encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PayloadFormat {
    /// MessagePack with field names (the canonical form).
    Msgpack,
    /// JSON text (for values MessagePack cannot hold faithfully).
    Json,
}

/// A transfer as the ledger stores it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LedgerRecord {
    /// The workflow's name.
    pub workflow: String,
    /// The run.
    pub run_id: u64,
    /// Position in the run, from 0.
    pub seq: u32,
    /// Agent turns completed before this transfer.
    pub hop: u32,
    /// The sender.
    pub from: Endpoint,
    /// The receiver.
    pub to: Endpoint,
    /// The payload's Rust type.
    pub payload_type: String,
    /// How `payload` is encoded.
    pub payload_format: PayloadFormat,
    /// The payload's canonical bytes, hex-encoded.
    pub payload: String,
    /// The receiver's answer.
    pub receipt: Receipt,
    /// Microseconds since the run started.
    pub at_us: u64,
    /// The same transfer delivered again after an escalation or a failed
    /// turn (absent from records that are not: ledgers written before it
    /// existed read the same).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub redelivery: bool,
    /// The sender's turn that produced this transfer (its tool calls with
    /// arguments, results and outcomes, and the usage it charged), when it
    /// had any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<crate::record::TurnRecord>,
    /// The OpenTelemetry trace the transfer was recorded in (32 hex digits)
    /// when the run is traced with OpenTelemetry (feature `otel` and its
    /// layer installed); empty otherwise.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub trace_id: String,
    /// The OpenTelemetry span the transfer was recorded in (16 hex digits):
    /// the span of its `handoff` event, `invoke_workflow` for a run driven
    /// by `Executor::run`; empty when `trace_id` is.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub span_id: String,
    /// The hash of the previous record of the run (64 zeros for the first).
    pub prev_hash: String,
    /// The SHA-256 of this record's content and `prev_hash`, hex-encoded.
    pub hash: String,
}

/// The hash of the record before the first one of a run.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

impl LedgerRecord {
    /// The hash of the record's content chained to `prev_hash`.
    pub fn compute_hash(&self) -> String {
        let mut h = Sha256::new();
        let mut field = |bytes: &[u8]| {
            h.update((bytes.len() as u64).to_le_bytes());
            h.update(bytes);
        };
        field(self.prev_hash.as_bytes());
        field(self.workflow.as_bytes());
        field(&self.run_id.to_le_bytes());
        field(&self.seq.to_le_bytes());
        field(&self.hop.to_le_bytes());
        field(self.from.to_string().as_bytes());
        field(self.to.to_string().as_bytes());
        field(self.payload_type.as_bytes());
        field(match self.payload_format {
            PayloadFormat::Msgpack => b"msgpack",
            PayloadFormat::Json => b"json",
        });
        field(self.payload.as_bytes());
        // A receipt always serializes; its JSON is canonical (fixed order).
        field(
            serde_json::to_string(&self.receipt)
                .unwrap_or_default()
                .as_bytes(),
        );
        field(&self.at_us.to_le_bytes());
        // Absent for most records: hashed as nothing, so records without a
        // turn hash as they always did.
        if self.redelivery {
            field(b"redelivery");
        }
        if let Some(turn) = &self.turn {
            field(serde_json::to_string(turn).unwrap_or_default().as_bytes());
        }
        // The trace link came later: a record without one hashes as before.
        if !self.trace_id.is_empty() || !self.span_id.is_empty() {
            field(self.trace_id.as_bytes());
            field(self.span_id.as_bytes());
        }
        hex::encode(h.finalize())
    }

    /// The payload's canonical bytes.
    pub fn payload_bytes(&self) -> Result<Vec<u8>, LedgerError> {
        hex::decode(&self.payload)
            .map_err(|e| LedgerError::Corrupt(format!("payload of #{}: {e}", self.seq)))
    }

    /// The payload as JSON text: the same text `serde_json` wrote for the
    /// value handed over.
    pub fn payload_json(&self) -> Result<String, LedgerError> {
        crate::canonical::to_json(self.payload_format, &self.payload_bytes()?)
            .map_err(|e| LedgerError::Corrupt(format!("payload of #{}: {e}", self.seq)))
    }
}

/// A ledger that could not store or give back records.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LedgerError {
    /// The storage failed (I/O, SQLite).
    #[error("ledger storage failed: {0}")]
    Storage(String),
    /// What the storage gave back is not a valid record.
    #[error("ledger record is corrupt: {0}")]
    Corrupt(String),
    /// A record with this run and sequence number is already stored.
    #[error("run {run_id} already has a record #{seq}")]
    Duplicate {
        /// The run.
        run_id: u64,
        /// The sequence number.
        seq: u32,
    },
}

/// Where records are committed.
pub trait Ledger: Send + Sync {
    /// Stores `record` durably; when this returns `Ok`, the record survives
    /// the process. A second record with the same run and sequence number is
    /// refused.
    fn append(&self, record: &LedgerRecord) -> Result<(), LedgerError>;

    /// The records of `run_id`, in sequence order.
    fn records(&self, run_id: u64) -> Result<Vec<LedgerRecord>, LedgerError>;

    /// The ids of the stored runs, in increasing order.
    fn runs(&self) -> Result<Vec<u64>, LedgerError>;

    /// The last sequence number and hash appended for `run_id`, kept apart
    /// from the records so that records cut off the end are found.
    fn head(&self, run_id: u64) -> Result<Option<(u32, String)>, LedgerError>;

    /// Journals the outcome of a tool call before the agent that made it
    /// sees it: call `call.index` of the turn whose outcome takes sequence
    /// number `turn_seq` in run `run_id`. When a run is resumed, the turn
    /// cut by the crash is served these outcomes instead of calling the
    /// tools again; a later call at the same place replaces the entry.
    ///
    /// The default keeps nothing: with a ledger that does not override it,
    /// a resumed turn calls its tools again (at least once).
    fn append_tool_call(
        &self,
        run_id: u64,
        turn_seq: u32,
        call: &ToolCallRecord,
    ) -> Result<(), LedgerError> {
        let _ = (run_id, turn_seq, call);
        Ok(())
    }

    /// The tool calls journaled for the turn at `turn_seq` of run `run_id`
    /// ([`append_tool_call`](Self::append_tool_call)), in index order.
    fn tool_calls(&self, run_id: u64, turn_seq: u32) -> Result<Vec<ToolCallRecord>, LedgerError> {
        let _ = (run_id, turn_seq);
        Ok(Vec::new())
    }

    /// Verifies the stored records of `run_id` against their chain and head.
    fn verify_run(&self, run_id: u64) -> Result<Result<(), Tampering>, LedgerError> {
        let records = self.records(run_id)?;
        let head = self.head(run_id)?;
        Ok(verify(
            run_id,
            &records,
            head.as_ref().map(|(s, h)| (*s, h.as_str())),
        ))
    }
}

/// Records kept in memory, for tests.
#[derive(Debug, Default)]
pub struct MemoryLedger {
    runs: Mutex<BTreeMap<u64, Vec<LedgerRecord>>>,
    heads: Mutex<BTreeMap<u64, (u32, String)>>,
    /// Journaled tool calls by run, turn and index.
    calls: Mutex<BTreeMap<(u64, u32, u32), ToolCallRecord>>,
}

impl MemoryLedger {
    /// An empty ledger.
    pub fn new() -> Self {
        MemoryLedger::default()
    }

    /// Replaces the stored records of `run_id` (to test [`verify`] on
    /// tampered records).
    pub fn replace(&self, run_id: u64, records: Vec<LedgerRecord>) {
        if let Ok(mut runs) = self.runs.lock() {
            runs.insert(run_id, records);
        }
    }
}

fn poisoned<T>(_: T) -> LedgerError {
    LedgerError::Storage("the in-memory ledger's lock was poisoned".into())
}

impl Ledger for MemoryLedger {
    fn append(&self, record: &LedgerRecord) -> Result<(), LedgerError> {
        let mut runs = self.runs.lock().map_err(poisoned)?;
        let run = runs.entry(record.run_id).or_default();
        if run.iter().any(|r| r.seq == record.seq) {
            return Err(LedgerError::Duplicate {
                run_id: record.run_id,
                seq: record.seq,
            });
        }
        run.push(record.clone());
        self.heads
            .lock()
            .map_err(poisoned)?
            .insert(record.run_id, (record.seq, record.hash.clone()));
        Ok(())
    }

    fn records(&self, run_id: u64) -> Result<Vec<LedgerRecord>, LedgerError> {
        let runs = self.runs.lock().map_err(poisoned)?;
        let mut records = runs.get(&run_id).cloned().unwrap_or_default();
        records.sort_by_key(|r| r.seq);
        Ok(records)
    }

    fn runs(&self) -> Result<Vec<u64>, LedgerError> {
        Ok(self
            .runs
            .lock()
            .map_err(poisoned)?
            .keys()
            .copied()
            .collect())
    }

    fn head(&self, run_id: u64) -> Result<Option<(u32, String)>, LedgerError> {
        Ok(self.heads.lock().map_err(poisoned)?.get(&run_id).cloned())
    }

    fn append_tool_call(
        &self,
        run_id: u64,
        turn_seq: u32,
        call: &ToolCallRecord,
    ) -> Result<(), LedgerError> {
        self.calls
            .lock()
            .map_err(poisoned)?
            .insert((run_id, turn_seq, call.index), call.clone());
        Ok(())
    }

    fn tool_calls(&self, run_id: u64, turn_seq: u32) -> Result<Vec<ToolCallRecord>, LedgerError> {
        Ok(self
            .calls
            .lock()
            .map_err(poisoned)?
            .range((run_id, turn_seq, 0)..=(run_id, turn_seq, u32::MAX))
            .map(|(_, call)| call.clone())
            .collect())
    }
}

/// What [`verify`] found wrong, at which record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Tampering {
    /// The run has no records.
    #[error("the run has no records")]
    Empty,
    /// A record's sequence number is not the next one: a record before it
    /// was removed, or records were reordered.
    #[error("record #{found} stands where #{expected} should: a record is missing or out of order")]
    Gap {
        /// The sequence number expected.
        expected: u32,
        /// The one found.
        found: u32,
    },
    /// A record does not chain to the one before it.
    #[error("record #{seq} does not chain to the record before it")]
    Unchained {
        /// The record.
        seq: u32,
    },
    /// A record's content does not match its hash: it was edited.
    #[error("record #{seq} was edited: its content does not match its hash")]
    Edited {
        /// The record.
        seq: u32,
    },
    /// The run does not end with its head: records were cut off the end.
    #[error("the run ends at #{last} but its head says #{head}: records were cut off")]
    Truncated {
        /// The last record present.
        last: u32,
        /// The last record the head names.
        head: u32,
    },
    /// A record of another run is mixed in.
    #[error("record #{seq} belongs to run {run_id}")]
    ForeignRun {
        /// The record.
        seq: u32,
        /// Its run.
        run_id: u64,
    },
}

/// Checks a run's records: contiguous sequence numbers from 0, each
/// chained to the one before, each matching its hash, and (when `head` is
/// given: the last sequence number and hash the ledger recorded for the run)
/// nothing cut off the end.
pub fn verify(
    run_id: u64,
    records: &[LedgerRecord],
    head: Option<(u32, &str)>,
) -> Result<(), Tampering> {
    let Some(last) = records.last() else {
        return Err(Tampering::Empty);
    };
    let mut prev = GENESIS;
    for (i, r) in records.iter().enumerate() {
        if r.run_id != run_id {
            return Err(Tampering::ForeignRun {
                seq: r.seq,
                run_id: r.run_id,
            });
        }
        if r.seq as usize != i {
            return Err(Tampering::Gap {
                expected: i as u32,
                found: r.seq,
            });
        }
        if r.prev_hash != prev {
            return Err(Tampering::Unchained { seq: r.seq });
        }
        if r.compute_hash() != r.hash {
            return Err(Tampering::Edited { seq: r.seq });
        }
        prev = &r.hash;
    }
    if let Some((head_seq, head_hash)) = head
        && (head_seq != last.seq || head_hash != last.hash)
    {
        return Err(Tampering::Truncated {
            last: last.seq,
            head: head_seq,
        });
    }
    Ok(())
}

impl fmt::Display for LedgerRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "run {} #{} hop {} {} -> {} {:?} {}",
            self.run_id, self.seq, self.hop, self.from, self.to, self.receipt, self.payload_type
        )
    }
}

#[cfg(feature = "sqlite")]
pub use sqlite::{Durability, SqliteLedger};

#[cfg(feature = "sqlite")]
mod sqlite {
    use std::path::Path;
    use std::sync::Mutex;

    use rusqlite::{Connection, OptionalExtension, params};

    use super::{Ledger, LedgerError, LedgerRecord, ToolCallRecord};

    /// Records in an embedded SQLite file (bundled SQLite: nothing to
    /// install). Each append is one transaction, committed before it returns
    /// (`synchronous = FULL`, write-ahead log).
    pub struct SqliteLedger {
        conn: Mutex<Connection>,
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
        pub fn open_with(
            path: impl AsRef<Path>,
            durability: Durability,
        ) -> Result<Self, LedgerError> {
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
                 );",
            )
            .map_err(storage)?;
            Ok(SqliteLedger {
                conn: Mutex::new(conn),
            })
        }

        fn conn(&self) -> Result<std::sync::MutexGuard<'_, Connection>, LedgerError> {
            self.conn.lock().map_err(|_| {
                LedgerError::Storage("the ledger's connection lock was poisoned".into())
            })
        }
    }

    // SQLite integers are i64; run ids are u64 stored bit for bit.
    fn id(run_id: u64) -> i64 {
        run_id as i64
    }

    impl Ledger for SqliteLedger {
        fn append(&self, record: &LedgerRecord) -> Result<(), LedgerError> {
            let json = serde_json::to_string(record).map_err(storage)?;
            let mut conn = self.conn()?;
            let tx = conn.transaction().map_err(storage)?;
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
            tx.commit().map_err(storage)
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
            let json = serde_json::to_string(call).map_err(storage)?;
            self.conn()?
                .execute(
                    "INSERT OR REPLACE INTO tool_calls (run_id, turn_seq, idx, call) VALUES (?1, ?2, ?3, ?4)",
                    params![id(run_id), turn_seq, call.index, json],
                )
                .map_err(storage)?;
            Ok(())
        }

        fn tool_calls(
            &self,
            run_id: u64,
            turn_seq: u32,
        ) -> Result<Vec<ToolCallRecord>, LedgerError> {
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
}
