//! The tampering part of the ledger campaign ([`crate::campaign`]): on a
//! copy of the ledger, one change at a time (a single-byte edit of a stored
//! record, a record deleted, a record's sequence number changed), each
//! verified by a fresh reader and then undone.

use std::path::Path;

use rusqlite::{Connection, params};
use workflow_core::ledger::{Ledger, SqliteLedger};

use crate::campaign::Report;

/// The kinds of tampering, in turn.
const KINDS: [&str; 3] = [
    "single-byte edit",
    "record deleted",
    "sequence number changed",
];

/// A stored record: its run, its sequence number (the column), its text.
struct Row {
    run: i64,
    seq: i64,
    text: Vec<u8>,
}

fn sql(e: rusqlite::Error) -> String {
    format!("the tampering copy: {e}")
}

/// Makes `tampers` changes to a copy of the ledger at `path`, one at a
/// time, and counts those that reading and verifying the run detects.
pub(crate) fn tamper(
    path: &Path,
    dir: &Path,
    tampers: usize,
    rng: &mut impl FnMut(usize) -> usize,
    report: &mut Report,
) -> Result<(), String> {
    // Everything into the main file, then one copy.
    Connection::open(path)
        .and_then(|c| c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);"))
        .map_err(sql)?;
    let copy = dir.join("tampered.db");
    std::fs::copy(path, &copy).map_err(|e| e.to_string())?;
    let conn = Connection::open(&copy).map_err(sql)?;
    let rows: Vec<Row> = {
        let mut stmt = conn
            .prepare("SELECT run_id, seq, CAST(record AS BLOB) FROM records")
            .map_err(sql)?;
        let rows = stmt
            .query_map([], |r| {
                Ok(Row {
                    run: r.get(0)?,
                    seq: r.get(1)?,
                    text: r.get(2)?,
                })
            })
            .map_err(sql)?;
        rows.collect::<Result<_, _>>().map_err(sql)?
    };
    if rows.is_empty() {
        return Err("the ledger holds no records to tamper with".into());
    }
    let reader = SqliteLedger::open(&copy).map_err(|e| e.to_string())?;
    for i in 0..tampers {
        let kind = KINDS[i % KINDS.len()];
        let row = &rows[rng(rows.len())];
        let mut moved = row.seq;
        match i % KINDS.len() {
            0 => {
                let mut text = row.text.clone();
                // A byte of ASCII (the stored JSON is), so that the edit is
                // one byte and the text stays text.
                let mut at = rng(text.len());
                while !text[at].is_ascii() {
                    at = rng(text.len());
                }
                let old = text[at];
                // Another printable byte: the edit keeps the text a string.
                let mut new = b' ' + rng(95) as u8;
                if new == old {
                    new = if old == b'~' { b' ' } else { old + 1 };
                }
                text[at] = new;
                put(&conn, row, &text)?;
            }
            1 => {
                conn.execute(
                    "DELETE FROM records WHERE run_id = ?1 AND seq = ?2",
                    params![row.run, row.seq],
                )
                .map_err(sql)?;
            }
            _ => {
                // A number no record of the run has.
                moved = row.seq + 1000 + rng(1000) as i64;
                conn.execute(
                    "UPDATE records SET seq = ?3 WHERE run_id = ?1 AND seq = ?2",
                    params![row.run, row.seq, moved],
                )
                .map_err(sql)?;
            }
        }
        let run = row.run as u64;
        let detected = reader.verify_run(run).is_err();
        let entry = report.tampering.entry(kind).or_default();
        entry.0 += 1;
        entry.1 += usize::from(detected);
        // Undone: the row as it was.
        conn.execute(
            "DELETE FROM records WHERE run_id = ?1 AND seq IN (?2, ?3)",
            params![row.run, row.seq, moved],
        )
        .map_err(sql)?;
        conn.execute(
            "INSERT INTO records (run_id, seq, record) VALUES (?1, ?2, ?3)",
            params![row.run, row.seq, String::from_utf8_lossy(&row.text)],
        )
        .map_err(sql)?;
    }
    Ok(())
}

/// Stores `text` as the record of `row`.
fn put(conn: &Connection, row: &Row, text: &[u8]) -> Result<(), String> {
    let text = String::from_utf8(text.to_vec()).map_err(|e| e.to_string())?;
    conn.execute(
        "UPDATE records SET record = ?3 WHERE run_id = ?1 AND seq = ?2",
        params![row.run, row.seq, text],
    )
    .map_err(sql)?;
    Ok(())
}
