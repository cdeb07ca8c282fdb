//! What makes an SQLite file a ledger, and which format it is in.
//!
//! A ledger is marked in the database header, not in a table of its own:
//! `PRAGMA application_id` says "this is a ledger" (so that `file(1)` and
//! any SQLite tool can tell one without reading a table) and
//! `PRAGMA user_version` carries the format version. Both are read without
//! a table, from a file of any shape, and are written in the same
//! transaction as the tables they describe.
//!
//! Files written before the mark (format 1, unmarked: application id and
//! user version 0, the three tables present) are recognised by their
//! tables and read as format 1; opening one for writing marks it.

use std::path::Path;

use rusqlite::Connection;

use crate::spec::LedgerError;

/// The SQLite `application_id` of a ledger file: `0x57464C47`, "WFLG".
pub const LEDGER_APPLICATION_ID: i32 = 0x5746_4C47;

/// The ledger file format this library writes, and the newest it reads.
/// Every older format is read (and verified) as it is; opening an older
/// file for writing upgrades it.
pub const LEDGER_FORMAT: u32 = 3;

/// A table and its columns, in order.
type Table = (&'static str, &'static [&'static str]);

/// The tables of format 1 (every later format keeps them).
const TABLES_1: &[Table] = &[
    ("records", &["run_id", "seq", "record"]),
    ("heads", &["run_id", "seq", "hash"]),
    ("tool_calls", &["run_id", "turn_seq", "idx", "call"]),
];

/// The tables of format 2: format 1's and the runs' leases (who resumes a
/// run, with which fencing token, until when). Its journal entries are
/// bound to their turn's record (format 1's bare calls are still read).
const TABLES_2: &[Table] = &[
    ("records", &["run_id", "seq", "record"]),
    ("heads", &["run_id", "seq", "hash"]),
    ("tool_calls", &["run_id", "turn_seq", "idx", "call"]),
    ("leases", &["run_id", "holder", "token", "expires_at_ms"]),
];

/// The tables of format 3: format 2's and the operators' revocations of
/// leases (`Executor::revoke`), kept so that a resumed run applies them
/// again.
const TABLES_3: &[Table] = &[
    ("records", &["run_id", "seq", "record"]),
    ("heads", &["run_id", "seq", "hash"]),
    ("tool_calls", &["run_id", "turn_seq", "idx", "call"]),
    ("leases", &["run_id", "holder", "token", "expires_at_ms"]),
    ("revocations", &["run_id", "idx", "revocation"]),
];

/// `MIGRATIONS[n]` takes a file from format `n` to format `n + 1`
/// (format 0: a file with no table). A new format adds its step here and
/// raises [`LEDGER_FORMAT`].
const MIGRATIONS: &[&str] = &[
    "CREATE TABLE records (
         run_id INTEGER NOT NULL,
         seq INTEGER NOT NULL,
         record TEXT NOT NULL,
         PRIMARY KEY (run_id, seq)
     );
     CREATE TABLE heads (
         run_id INTEGER PRIMARY KEY,
         seq INTEGER NOT NULL,
         hash TEXT NOT NULL
     );
     CREATE TABLE tool_calls (
         run_id INTEGER NOT NULL,
         turn_seq INTEGER NOT NULL,
         idx INTEGER NOT NULL,
         call TEXT NOT NULL,
         PRIMARY KEY (run_id, turn_seq, idx)
     );",
    "CREATE TABLE leases (
         run_id INTEGER PRIMARY KEY,
         holder TEXT NOT NULL,
         token INTEGER NOT NULL,
         expires_at_ms INTEGER NOT NULL
     );",
    "CREATE TABLE revocations (
         run_id INTEGER NOT NULL,
         idx INTEGER NOT NULL,
         revocation TEXT NOT NULL,
         PRIMARY KEY (run_id, idx)
     );",
];

const _: () = assert!(MIGRATIONS.len() == LEDGER_FORMAT as usize);

/// What a file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Found {
    /// No table at all: an empty file or a new database, which a writing
    /// open makes a ledger.
    Nothing,
    /// A ledger of this format (marked, or format 1 unmarked).
    Ledger {
        /// The format version.
        format: u32,
        /// Whether the header carries the mark.
        marked: bool,
    },
}

impl Found {
    /// Whether opening for writing must change the file.
    pub(super) fn needs_upgrade(self) -> bool {
        !matches!(self, Found::Ledger { format, marked: true } if format == LEDGER_FORMAT)
    }
}

/// What the file at `path`, open on `conn`, holds; reads only.
pub(super) fn recognise(conn: &Connection, path: &Path) -> Result<Found, LedgerError> {
    let not_a_ledger = |why: String| LedgerError::NotALedger {
        path: path.to_owned(),
        why,
    };
    let pragma = |name: &str| {
        conn.query_row(&format!("PRAGMA {name}"), [], |row| row.get::<_, i64>(0))
            .map_err(|e| match e.sqlite_error_code() {
                Some(rusqlite::ErrorCode::NotADatabase) => {
                    not_a_ledger("it is not an SQLite database".into())
                }
                _ => LedgerError::Storage(format!("{}: {e}", path.display())),
            })
    };
    let application_id = pragma("application_id")?;
    let version = pragma("user_version")?;
    let tables = table_names(conn, path)?;
    match application_id {
        id if id == i64::from(LEDGER_APPLICATION_ID) => {
            let format = u32::try_from(version)
                .ok()
                .filter(|v| (1..=LEDGER_FORMAT).contains(v))
                .ok_or_else(|| LedgerError::UnsupportedVersion {
                    path: path.to_owned(),
                    found: version,
                    supported: LEDGER_FORMAT,
                })?;
            check_tables(conn, &tables, format).map_err(not_a_ledger)?;
            Ok(Found::Ledger {
                format,
                marked: true,
            })
        }
        0 if tables.is_empty() => Ok(Found::Nothing),
        0 => {
            if version != 0 {
                return Err(not_a_ledger(format!(
                    "it is unmarked but carries user_version {version}, which a ledger never set"
                )));
            }
            check_tables(conn, &tables, 1).map_err(not_a_ledger)?;
            Ok(Found::Ledger {
                format: 1,
                marked: false,
            })
        }
        other => Err(not_a_ledger(format!(
            "its application_id is {other:#x}, another application's (a ledger's is {LEDGER_APPLICATION_ID:#x})"
        ))),
    }
}

/// The names of the file's own tables (not SQLite's).
fn table_names(conn: &Connection, path: &Path) -> Result<Vec<String>, LedgerError> {
    let storage = |e: rusqlite::Error| LedgerError::Storage(format!("{}: {e}", path.display()));
    let mut stmt = conn
        .prepare(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
        )
        .map_err(storage)?;
    let names = stmt
        .query_map([], |row| row.get::<_, String>(0))
        .map_err(storage)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(storage)?;
    Ok(names)
}

/// Why the tables of the file are not those of `format`, if they are not.
fn check_tables(conn: &Connection, tables: &[String], format: u32) -> Result<(), String> {
    let expected = match format {
        1 => TABLES_1,
        2 => TABLES_2,
        3 => TABLES_3,
        _ => return Err(format!("format {format} has no known tables")),
    };
    for (table, columns) in expected {
        if !tables.iter().any(|t| t == table) {
            return Err(format!("it has no `{table}` table"));
        }
        let found = columns_of(conn, table)
            .map_err(|e| format!("the columns of `{table}` do not read ({e})"))?;
        if found != *columns {
            return Err(format!(
                "its `{table}` table has the columns ({}), a ledger's has ({})",
                found.join(", "),
                columns.join(", ")
            ));
        }
    }
    Ok(())
}

fn columns_of(conn: &Connection, table: &str) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare("SELECT name FROM pragma_table_info(?1) ORDER BY cid")?;
    stmt.query_map([table], |row| row.get::<_, String>(0))?
        .collect()
}

/// Brings the file from what it holds (`found`, read again inside the
/// write transaction, so that two processes opening one new file do not
/// both create it) to [`LEDGER_FORMAT`], and marks it. The only code that
/// writes a ledger's shape.
pub(super) fn upgrade(conn: &mut Connection, path: &Path) -> Result<(), LedgerError> {
    let storage = |e: rusqlite::Error| LedgerError::Storage(format!("{}: {e}", path.display()));
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(storage)?;
    let from = match recognise(&tx, path)? {
        Found::Nothing => 0,
        found @ Found::Ledger { format, .. } => {
            if !found.needs_upgrade() {
                return Ok(());
            }
            format
        }
    };
    for step in &MIGRATIONS[from as usize..] {
        tx.execute_batch(step).map_err(storage)?;
    }
    tx.pragma_update(None, "application_id", LEDGER_APPLICATION_ID)
        .map_err(storage)?;
    tx.pragma_update(None, "user_version", LEDGER_FORMAT)
        .map_err(storage)?;
    tx.commit().map_err(storage)
}
