//! The ledger file's recognition, format version and read-only opening;
//! records checked against the row that stores them.

use std::path::{Path, PathBuf};

use rusqlite::Connection;

use crate::ledger::{
    GENESIS, LEDGER_APPLICATION_ID, LEDGER_FORMAT, Ledger, LedgerError, LedgerRecord,
    PayloadFormat, SqliteLedger, Tampering, VerifyError,
};
use crate::spec::{Endpoint, Receipt};

/// A fresh folder for this test, removed when dropped.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

fn scratch(name: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!("wf-core-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temp dir");
    Scratch(dir)
}

/// `n` chained records of run `run_id`.
fn chain(run_id: u64, n: u32) -> Vec<LedgerRecord> {
    let mut prev = GENESIS.to_owned();
    (0..n)
        .map(|seq| {
            let mut r = LedgerRecord {
                workflow: "w".into(),
                run_id,
                seq,
                hop: seq,
                from: Endpoint::Start,
                to: Endpoint::End,
                payload_type: "u32".into(),
                payload_format: PayloadFormat::Json,
                payload: hex::encode(seq.to_string()),
                receipt: Receipt::Accepted,
                at_us: u64::from(seq),
                redelivery: false,
                turn: None,
                trace_id: String::new(),
                span_id: String::new(),
                root: None,
                sender_scope: None,
                mode: Default::default(),
                lineage: None,
                prev_hash: prev.clone(),
                hash: String::new(),
            };
            r.hash = r.compute_hash();
            prev = r.hash.clone();
            r
        })
        .collect()
}

/// A ledger file with runs 1 (3 records) and 2 (2 records).
fn ledger_file(dir: &Path) -> PathBuf {
    let path = dir.join("runs.db");
    let ledger = SqliteLedger::open(&path).expect("opens");
    for r in chain(1, 3).iter().chain(&chain(2, 2)) {
        ledger.append(r).expect("appends");
    }
    path
}

fn pragma(path: &Path, name: &str) -> i64 {
    Connection::open(path)
        .expect("opens")
        .query_row(&format!("PRAGMA {name}"), [], |row| row.get(0))
        .expect("reads")
}

/// Both opens refuse the file with `expected`, and neither changes it.
fn refused_unchanged(path: &Path, expected: impl Fn(&LedgerError) -> bool) {
    let before = std::fs::read(path).expect("reads");
    let read = SqliteLedger::open_read_only(path).err().expect("refused");
    assert!(expected(&read), "open_read_only: {read}");
    let write = SqliteLedger::open(path).err().expect("refused");
    assert!(expected(&write), "open: {write}");
    assert_eq!(
        std::fs::read(path).expect("reads"),
        before,
        "the file is unchanged"
    );
}

#[test]
fn a_new_ledger_file_is_marked_with_its_application_id_and_format() {
    let dir = scratch("marked");
    let path = ledger_file(&dir);
    assert_eq!(
        pragma(&path, "application_id"),
        i64::from(LEDGER_APPLICATION_ID)
    );
    assert_eq!(pragma(&path, "user_version"), i64::from(LEDGER_FORMAT));
}

#[test]
fn a_file_written_before_the_mark_reads_as_format_1_and_is_marked_only_when_opened_for_writing() {
    let dir = scratch("unmarked");
    let path = dir.join("old.db");
    // The tables exactly as the code before the mark created them.
    let conn = Connection::open(&path).expect("creates");
    conn.pragma_update(None, "journal_mode", "WAL").unwrap();
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS records (
             run_id INTEGER NOT NULL, seq INTEGER NOT NULL, record TEXT NOT NULL,
             PRIMARY KEY (run_id, seq));
         CREATE TABLE IF NOT EXISTS heads (
             run_id INTEGER PRIMARY KEY, seq INTEGER NOT NULL, hash TEXT NOT NULL);
         CREATE TABLE IF NOT EXISTS tool_calls (
             run_id INTEGER NOT NULL, turn_seq INTEGER NOT NULL, idx INTEGER NOT NULL,
             call TEXT NOT NULL, PRIMARY KEY (run_id, turn_seq, idx));",
    )
    .unwrap();
    for r in chain(5, 2) {
        conn.execute(
            "INSERT INTO records VALUES (?1, ?2, ?3)",
            rusqlite::params![5, r.seq, serde_json::to_string(&r).unwrap()],
        )
        .unwrap();
        conn.execute(
            "INSERT OR REPLACE INTO heads VALUES (?1, ?2, ?3)",
            rusqlite::params![5, r.seq, r.hash],
        )
        .unwrap();
    }
    drop(conn);
    let before = std::fs::read(&path).unwrap();

    let read = SqliteLedger::open_read_only(&path).expect("an old ledger opens");
    assert_eq!(read.runs().unwrap(), vec![5]);
    assert_eq!(read.verify_run(5), Ok(()));
    drop(read);
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "reading wrote nothing"
    );
    assert_eq!(pragma(&path, "user_version"), 0);

    let write = SqliteLedger::open(&path).expect("opens for writing");
    assert_eq!(write.verify_run(5), Ok(()), "the upgrade keeps the records");
    drop(write);
    assert_eq!(
        pragma(&path, "application_id"),
        i64::from(LEDGER_APPLICATION_ID)
    );
    assert_eq!(pragma(&path, "user_version"), i64::from(LEDGER_FORMAT));
}

#[test]
fn a_newer_format_is_refused_by_both_opens_naming_both_versions() {
    let dir = scratch("newer");
    let path = ledger_file(&dir);
    let conn = Connection::open(&path).unwrap();
    conn.pragma_update(None, "user_version", 99).unwrap();
    drop(conn);
    refused_unchanged(
        &path,
        |e| matches!(e, LedgerError::UnsupportedVersion { found: 99, supported, .. } if *supported == LEDGER_FORMAT),
    );
    let message = SqliteLedger::open_read_only(&path)
        .err()
        .unwrap()
        .to_string();
    assert!(
        message.contains("format version 99") && message.contains(&format!("1 to {LEDGER_FORMAT}")),
        "{message}"
    );
}

#[test]
fn files_that_are_not_ledgers_are_refused_by_both_opens_and_left_unchanged() {
    let dir = scratch("foreign");
    let not_a_ledger = |want: &'static str| move |e: &LedgerError| matches!(e, LedgerError::NotALedger { why, .. } if why.contains(want));

    let text = dir.join("notes.txt");
    std::fs::write(&text, "these are not the records you are looking for, at least 100 bytes long, so SQLite reads a header").unwrap();
    refused_unchanged(&text, not_a_ledger("not an SQLite database"));

    let foreign = dir.join("app.db");
    let conn = Connection::open(&foreign).unwrap();
    conn.execute_batch("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users VALUES (1, 'ada');").unwrap();
    drop(conn);
    refused_unchanged(&foreign, not_a_ledger("no `records` table"));

    let shaped = dir.join("shaped.db");
    let conn = Connection::open(&shaped).unwrap();
    conn.execute_batch("CREATE TABLE records (id INTEGER, body BLOB); CREATE TABLE heads (run_id INTEGER PRIMARY KEY, seq INTEGER NOT NULL, hash TEXT NOT NULL);").unwrap();
    drop(conn);
    refused_unchanged(
        &shaped,
        not_a_ledger("`records` table has the columns (id, body)"),
    );

    let other_app = dir.join("other.db");
    let conn = Connection::open(&other_app).unwrap();
    conn.pragma_update(None, "application_id", 0x0F05_5112)
        .unwrap();
    drop(conn);
    refused_unchanged(&other_app, not_a_ledger("application_id is 0xf055112"));

    // An empty file becomes a ledger when opened for writing, never when
    // read.
    let empty = dir.join("empty.db");
    std::fs::write(&empty, b"").unwrap();
    let e = SqliteLedger::open_read_only(&empty).err().expect("refused");
    assert!(not_a_ledger("holds no table")(&e), "{e}");
    assert_eq!(std::fs::metadata(&empty).unwrap().len(), 0);

    let missing = dir.join("missing.db");
    let e = SqliteLedger::open_read_only(&missing)
        .err()
        .expect("refused");
    assert!(not_a_ledger("no such file")(&e), "{e}");
    assert!(!missing.exists(), "never created");
}

#[test]
fn reading_a_rollback_journal_ledger_keeps_its_journal_mode_and_bytes() {
    let dir = scratch("rollback");
    let path = ledger_file(&dir);
    let conn = Connection::open(&path).unwrap();
    conn.pragma_update(None, "journal_mode", "DELETE").unwrap();
    drop(conn);
    let before = std::fs::read(&path).unwrap();
    let ledger = SqliteLedger::open_read_only(&path).expect("opens");
    assert_eq!(ledger.runs().unwrap(), vec![1, 2]);
    assert_eq!(ledger.verify_run(1), Ok(()));
    assert!(
        ledger.append(&chain(3, 1)[0]).is_err(),
        "a read-only ledger refuses appends"
    );
    drop(ledger);
    assert_eq!(std::fs::read(&path).unwrap(), before);
    let mode: String = Connection::open(&path)
        .unwrap()
        .query_row("PRAGMA journal_mode", [], |row| row.get(0))
        .unwrap();
    assert_eq!(mode, "delete");
    let listing: Vec<_> = std::fs::read_dir(&*dir.0).unwrap().collect();
    assert_eq!(listing.len(), 1, "no journal or log was created");
}

#[test]
fn a_record_stored_under_another_sequence_number_fails_verify() {
    let dir = scratch("seq");
    let path = ledger_file(&dir);
    // The last record of run 1 moved from #2 to #7: its content (and so
    // the chain and the head) are intact.
    Connection::open(&path)
        .unwrap()
        .execute(
            "UPDATE records SET seq = 7 WHERE run_id = 1 AND seq = 2",
            [],
        )
        .unwrap();
    let ledger = SqliteLedger::open_read_only(&path).unwrap();
    assert_eq!(
        ledger.records(1),
        Err(LedgerError::CorruptRecord {
            run_id: 1,
            seq: 7,
            why: "it is stored as #7 but carries #2".into()
        })
    );
    assert!(matches!(
        ledger.verify_run(1),
        Err(VerifyError::Tampered(Tampering::Unreadable { seq: 7, .. }))
    ));
    assert_eq!(ledger.verify_run(2), Ok(()), "the other run is as it was");
}

#[test]
fn a_record_that_does_not_read_fails_its_run_only() {
    let dir = scratch("unreadable");
    let path = ledger_file(&dir);
    let conn = Connection::open(&path).unwrap();
    conn.execute(
        "UPDATE records SET record = '{\"not\": \"a record\"}' WHERE run_id = 1 AND seq = 1",
        [],
    )
    .unwrap();
    conn.execute(
        "UPDATE records SET record = x'deadbeef' WHERE run_id = 2 AND seq = 0",
        [],
    )
    .unwrap();
    drop(conn);
    let ledger = SqliteLedger::open_read_only(&path).unwrap();
    assert_eq!(ledger.runs().unwrap(), vec![1, 2]);
    assert!(matches!(
        ledger.verify_run(1),
        Err(VerifyError::Tampered(Tampering::Unreadable { seq: 1, ref why })) if why.contains("not a record")
    ));
    assert!(matches!(
        ledger.verify_run(2),
        Err(VerifyError::Tampered(Tampering::Unreadable { seq: 0, ref why })) if why.contains("a blob, not text")
    ));
}

#[test]
fn a_run_whose_records_were_all_removed_is_listed_and_fails_verify() {
    let dir = scratch("orphan");
    let path = ledger_file(&dir);
    Connection::open(&path)
        .unwrap()
        .execute("DELETE FROM records WHERE run_id = 1", [])
        .unwrap();
    let ledger = SqliteLedger::open_read_only(&path).unwrap();
    assert_eq!(ledger.runs().unwrap(), vec![1, 2], "listed from its head");
    assert_eq!(
        ledger.verify_run(1),
        Err(VerifyError::Tampered(Tampering::Removed { head: 2 }))
    );
    assert_eq!(
        ledger.verify_run(9),
        Err(VerifyError::Tampered(Tampering::Empty))
    );
}

#[test]
fn a_head_that_does_not_read_fails_its_run() {
    let dir = scratch("head");
    let path = ledger_file(&dir);
    Connection::open(&path)
        .unwrap()
        .execute("UPDATE heads SET seq = 'two' WHERE run_id = 1", [])
        .unwrap();
    let ledger = SqliteLedger::open_read_only(&path).unwrap();
    assert!(matches!(
        ledger.verify_run(1),
        Err(VerifyError::Tampered(Tampering::HeadUnreadable { .. }))
    ));
    assert_eq!(ledger.verify_run(2), Ok(()));
}

#[test]
fn revocations_are_kept_by_run_and_an_older_file_read_only_has_none() {
    use crate::spec::{LeaseId, StoredRevocation};
    let dir = scratch("revocations");
    let path = ledger_file(&dir);
    let kept = |run_id, seq, after| StoredRevocation {
        lease: LeaseId { run_id, seq },
        by: "ops".into(),
        after,
        at_unix_ms: 1_700_000_000_000,
    };
    let ledger = SqliteLedger::open(&path).expect("opens");
    for r in [kept(1, 1, Some(0)), kept(2, 0, None), kept(1, 2, Some(1))] {
        ledger.append_revocation(&r).expect("kept");
    }
    drop(ledger);
    // Another open (another process) reads them back, by run, in order.
    let read = SqliteLedger::open_read_only(&path).expect("opens");
    assert_eq!(
        read.revocations(1).unwrap(),
        vec![kept(1, 1, Some(0)), kept(1, 2, Some(1))]
    );
    assert_eq!(read.revocations(2).unwrap(), vec![kept(2, 0, None)]);
    assert_eq!(read.revocations(3).unwrap(), vec![]);
    drop(read);

    // A format-2 file (no `revocations` table) opened for reading holds
    // none; opened for writing, it is upgraded and keeps them.
    let old = dir.join("format2.db");
    drop(SqliteLedger::open(&old).expect("creates"));
    let conn = Connection::open(&old).unwrap();
    conn.execute_batch("DROP TABLE revocations; PRAGMA user_version = 2;")
        .unwrap();
    drop(conn);
    let read = SqliteLedger::open_read_only(&old).expect("a format-2 ledger opens");
    assert_eq!(read.revocations(1).unwrap(), vec![]);
    drop(read);
    assert_eq!(pragma(&old, "user_version"), 2);
    let write = SqliteLedger::open(&old).expect("upgrades");
    write.append_revocation(&kept(1, 1, None)).expect("kept");
    assert_eq!(write.revocations(1).unwrap(), vec![kept(1, 1, None)]);
    drop(write);
    assert_eq!(pragma(&old, "user_version"), i64::from(LEDGER_FORMAT));
}
