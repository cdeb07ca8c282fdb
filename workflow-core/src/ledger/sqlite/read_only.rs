//! Opening a ledger file so that nothing is ever written to it.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, ErrorCode, OpenFlags};

use crate::spec::LedgerError;

/// A read-only connection to the file at `path`, its header read once (so
/// that a file SQLite cannot open this way is found here, not at the first
/// query).
///
/// First as any SQLite reader: read-only, with the usual locks, so that a
/// writer at work in another process is seen consistently. When SQLite
/// cannot open the file so because it cannot create the write-ahead log's
/// `-shm` index beside it (a read-only folder) and no log or journal with
/// content is pending, the file is opened `immutable=1`: every commit is
/// in the main file, and no writer can start a log where its index cannot
/// be created.
pub(super) fn open(path: &Path) -> Result<Connection, LedgerError> {
    let storage = |e: rusqlite::Error| LedgerError::Storage(format!("{}: {e}", path.display()));
    if !path.is_file() {
        return Err(LedgerError::NotALedger {
            path: path.to_owned(),
            why: "there is no such file".into(),
        });
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(storage)?;
    let probe = |conn: &Connection| {
        conn.query_row("PRAGMA application_id", [], |row| row.get::<_, i64>(0))
            .map(|_| ())
    };
    match probe(&conn) {
        Ok(()) => Ok(conn),
        Err(e)
            if matches!(
                e.sqlite_error_code(),
                Some(ErrorCode::CannotOpen | ErrorCode::ReadOnly)
            ) =>
        {
            if let Some(pending) = pending_log(path) {
                return Err(LedgerError::Storage(format!(
                    "{}: {e}; its log {} holds commits that SQLite reads only with write access \
                     to the folder: read it where the folder is writable, or once a writer has \
                     checkpointed it",
                    path.display(),
                    pending.display()
                )));
            }
            drop(conn);
            let conn = Connection::open_with_flags(
                immutable_uri(path).map_err(|why| LedgerError::Storage(why.into()))?,
                flags | OpenFlags::SQLITE_OPEN_URI,
            )
            .map_err(storage)?;
            probe(&conn).map_err(storage)?;
            Ok(conn)
        }
        // Not an SQLite file, and the like: recognised by the caller.
        Err(_) => Ok(conn),
    }
}

/// The write-ahead log or rollback journal beside `path` that holds
/// content, if one does.
fn pending_log(path: &Path) -> Option<PathBuf> {
    ["-wal", "-journal"].into_iter().find_map(|suffix| {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        let log = PathBuf::from(name);
        let len = std::fs::metadata(&log).map(|m| m.len()).unwrap_or(0);
        (len > 0).then_some(log)
    })
}

/// The SQLite URI that opens `path` as an immutable file (`%`, `?` and
/// `#` escaped, as the URI syntax wants).
fn immutable_uri(path: &Path) -> Result<String, &'static str> {
    let text = path.to_str().ok_or(
        "a ledger path that is not UTF-8 cannot be opened read-only in a read-only folder",
    )?;
    let mut uri = String::from("file:");
    for c in text.chars() {
        match c {
            '%' => uri.push_str("%25"),
            '?' => uri.push_str("%3f"),
            '#' => uri.push_str("%23"),
            c => uri.push(c),
        }
    }
    uri.push_str("?immutable=1");
    Ok(uri)
}
