//! Read commands never write: files that are not ledgers are refused with
//! exit code 2 and left as they were, ledgers in read-only files and
//! folders are read, and every run is reported even when some do not read.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::{Command, Output};

use examples::deploy_workflow::staging_root;
use rusqlite::Connection;
use workflow_cli::exit;
use workflow_core::ledger::LEDGER_FORMAT;

use crate::fixtures::scratch;
use crate::replay_schema::{arg, deploy_cli, ledger};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The generic binary on `path`.
fn workflow(path: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_workflow"))
        .arg("--ledger")
        .arg(path)
        .args(args)
        .output()
        .expect("the command runs")
}

/// Every read command on `path` (`runs` are the ids to name): its exit
/// code and standard error, the file compared byte for byte before and
/// after each.
fn every_read_command(path: &Path, runs: [u64; 3]) -> Vec<(String, u8, String)> {
    let [a, b, _] = runs.map(|r| r.to_string());
    let commands: [&[&str]; 6] = [
        &["runs"],
        &["show", &a],
        &["verify"],
        &["export", &a],
        &["diff", &a, &b],
        &["replay"],
    ];
    let mut results = Vec::new();
    for args in commands {
        let before = std::fs::read(path).expect("reads the file");
        let (code, err) = if args[0] == "replay" {
            let mut argv = vec!["--ledger", arg(path)];
            argv.extend_from_slice(args);
            let (code, _, err) = deploy_cli(staging_root, &argv);
            (code, err)
        } else {
            let out = workflow(path, args);
            (out.status.code().unwrap_or(-1) as u8, text(&out.stderr))
        };
        assert!(
            std::fs::read(path).expect("reads the file") == before,
            "`{}` changed {}",
            args.join(" "),
            path.display()
        );
        results.push((args.join(" "), code, err));
    }
    results
}

#[test]
fn no_read_command_changes_a_file_that_is_not_a_ledger_and_each_exits_with_2() {
    let dir = scratch("ro-foreign");
    let runs = [1, 2, 3];

    let empty = dir.join("empty.db");
    std::fs::write(&empty, b"").unwrap();

    let foreign = dir.join("app.db");
    let conn = Connection::open(&foreign).unwrap();
    conn.execute_batch(
        "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users VALUES (1, 'ada');",
    )
    .unwrap();
    drop(conn);

    let shaped = dir.join("shaped.db");
    let conn = Connection::open(&shaped).unwrap();
    conn.execute_batch(
        "CREATE TABLE records (id INTEGER, body TEXT); INSERT INTO records VALUES (1, 'x');",
    )
    .unwrap();
    drop(conn);

    for (path, why) in [
        (&empty, "holds no table"),
        (&foreign, "has no `records` table"),
        (&shaped, "its `records` table has the columns (id, body)"),
    ] {
        for (command, code, err) in every_read_command(path, runs) {
            assert_eq!(
                code,
                exit::BAD_INPUT,
                "`{command}` on {}: {err}",
                path.display()
            );
            assert!(
                err.contains("is not a ledger") && err.contains(why),
                "`{command}` on {}: {err}",
                path.display()
            );
        }
    }
    assert_eq!(std::fs::metadata(&empty).unwrap().len(), 0);
}

#[test]
fn no_read_command_changes_a_ledger_in_either_journal_mode_or_of_a_newer_format() {
    // Write-ahead log (as `SqliteLedger::open` leaves it).
    let (_wal_dir, wal, runs) = ledger("ro-wal");
    for (command, code, err) in every_read_command(&wal, runs) {
        assert_ne!(code, exit::BAD_INPUT, "`{command}`: {err}");
    }

    // Rollback journal: read as it is, never switched to the log.
    let (_dir, rollback, runs) = ledger("ro-rollback");
    let conn = Connection::open(&rollback).unwrap();
    conn.pragma_update(None, "journal_mode", "DELETE").unwrap();
    drop(conn);
    for (command, code, err) in every_read_command(&rollback, runs) {
        assert_ne!(code, exit::BAD_INPUT, "`{command}`: {err}");
    }
    let mode: String = Connection::open(&rollback)
        .unwrap()
        .query_row("PRAGMA journal_mode", [], |row| row.get(0))
        .unwrap();
    assert_eq!(mode, "delete");

    // A newer format: refused, naming both versions.
    let (_dir, newer, runs) = ledger("ro-newer");
    let conn = Connection::open(&newer).unwrap();
    conn.pragma_update(None, "user_version", LEDGER_FORMAT + 1)
        .unwrap();
    drop(conn);
    for (command, code, err) in every_read_command(&newer, runs) {
        assert_eq!(code, exit::BAD_INPUT, "`{command}`: {err}");
        assert!(
            err.contains(&format!("format version {}", LEDGER_FORMAT + 1))
                && err.contains(&format!("1 to {LEDGER_FORMAT}")),
            "`{command}`: {err}"
        );
    }
}

/// The generic binary on `path` as a user without the right to write it:
/// this one, or `nobody` when the tests run as root (whom file modes do
/// not stop).
fn workflow_unprivileged(path: &Path, args: &[&str]) -> Output {
    let probe = std::env::temp_dir().join(format!("wf-uid-{}", std::process::id()));
    std::fs::write(&probe, b"").unwrap();
    let root = std::fs::metadata(&probe).unwrap().uid() == 0;
    let _ = std::fs::remove_file(&probe);
    let mut command = if root {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_workflow"));
        c
    } else {
        Command::new(env!("CARGO_BIN_EXE_workflow"))
    };
    command
        .arg("--ledger")
        .arg(path)
        .args(args)
        .output()
        .expect("the command runs (as root, `setpriv` drops the privileges)")
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// `runs`, `show` and `verify` read the ledger at `path`, which stays
/// unchanged.
fn reads(path: &Path, runs: [u64; 3], what: &str) {
    let before = std::fs::read(path).unwrap();
    let out = workflow_unprivileged(path, &["verify"]);
    assert_eq!(out.status.code(), Some(0), "{what}: {}", text(&out.stderr));
    assert_eq!(text(&out.stdout).matches(": ok").count(), 3, "{what}");
    let out = workflow_unprivileged(path, &["runs"]);
    assert_eq!(out.status.code(), Some(0), "{what}: {}", text(&out.stderr));
    let out = workflow_unprivileged(path, &["show", &runs[0].to_string()]);
    assert_eq!(out.status.code(), Some(0), "{what}: {}", text(&out.stderr));
    assert!(std::fs::read(path).unwrap() == before, "{what}: changed");
}

#[test]
fn a_ledger_in_a_read_only_folder_or_file_is_read() {
    // The folders must be traversable by `nobody`.
    let (dir, path, runs) = ledger("ro-folder");
    chmod(&dir, 0o555);
    let before = listing(&dir);
    reads(&path, runs, "write-ahead log, read-only folder");
    assert_eq!(listing(&dir), before, "nothing created in the folder");

    chmod(&dir, 0o755);
    let conn = Connection::open(&path).unwrap();
    conn.pragma_update(None, "journal_mode", "DELETE").unwrap();
    drop(conn);
    chmod(&dir, 0o555);
    reads(&path, runs, "rollback journal, read-only folder");
    assert_eq!(listing(&dir), before);
    chmod(&dir, 0o755);

    let (file_dir, file, runs) = ledger("ro-file");
    chmod(&file, 0o444);
    chmod(&file_dir, 0o777);
    reads(&file, runs, "write-ahead log, read-only file");
    chmod(&file_dir, 0o755);
}

#[test]
fn a_pending_log_in_a_read_only_folder_is_read_never_an_older_view() {
    let (dir, path, runs) = ledger("ro-pending");
    // A writer's commit (the last record of the first run removed) still
    // in the log: copied with the file while the writer holds it open, so
    // that the folder has the log and no index.
    let writer = Connection::open(&path).unwrap();
    writer
        .execute(
            "DELETE FROM records WHERE run_id = ?1 AND seq = 3",
            [runs[0] as i64],
        )
        .unwrap();
    let copy = scratch("ro-pending-copy");
    std::fs::copy(&path, copy.join("runs.db")).unwrap();
    std::fs::copy(dir.join("runs.db-wal"), copy.join("runs.db-wal")).unwrap();
    drop(writer);
    chmod(&copy, 0o555);
    let out = workflow_unprivileged(&copy.join("runs.db"), &["verify"]);
    chmod(&copy, 0o755);
    // The bundled SQLite reads a log without its index in a read-only
    // folder; where it cannot, the command says so (exit code 2). Never
    // the main file alone, which would verify.
    match out.status.code() {
        Some(1) => assert!(
            text(&out.stdout).contains(&format!(
                "run {}: the run ends at #2 but its head says #3",
                runs[0]
            )),
            "{}",
            text(&out.stdout)
        ),
        code => {
            assert_eq!(code, Some(2), "{}", text(&out.stdout));
            assert!(
                text(&out.stderr).contains("runs.db-wal holds commits"),
                "{}",
                text(&out.stderr)
            );
        }
    }
}

#[test]
fn verify_and_runs_report_every_run_when_some_do_not_read() {
    let (_dir, path, [clean, incident, drifted]) = ledger("ro-every-run");
    let conn = Connection::open(&path).unwrap();
    conn.execute(
        "UPDATE records SET record = '{\"truncated\": ' WHERE run_id = ?1 AND seq = 1",
        [clean as i64],
    )
    .unwrap();
    conn.execute("DELETE FROM records WHERE run_id = ?1", [incident as i64])
        .unwrap();
    drop(conn);

    let out = workflow(&path, &["verify"]);
    let report = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{report}{}", text(&out.stderr));
    assert!(
        report.contains(&format!(
            "run {clean}: record #1 does not read: it is not a record"
        )),
        "{report}"
    );
    assert!(
        report.contains(&format!(
            "run {incident}: its head says #2, but the run has no records"
        )),
        "{report}"
    );
    assert!(report.contains(&format!("run {drifted}: ok")), "{report}");

    let out = workflow(&path, &["runs"]);
    let listing = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{listing}{}", text(&out.stderr));
    assert!(
        listing.contains(&format!(
            "{clean}\t?\tDOES NOT READ: record #1 does not read"
        )),
        "{listing}"
    );
    assert!(
        listing.contains(&format!(
            "{incident}\t?\tDOES NOT READ: no records, though its head says #2"
        )),
        "{listing}"
    );
    assert!(
        listing.contains(&format!("{drifted}\tdeploy\t")),
        "{listing}"
    );

    // Named, the run without records is reported too, not unknown.
    let out = workflow(&path, &["verify", &incident.to_string()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
}

#[test]
fn a_record_moved_to_another_sequence_number_fails_verify() {
    // Moving the last record's row from #3 to #9 keeps its content, its
    // chain and the head intact: it passed `verify` and then broke every
    // resume (the next record, #4, sorted before it).
    let (_dir, path, [clean, ..]) = ledger("ro-moved");
    Connection::open(&path)
        .unwrap()
        .execute(
            "UPDATE records SET seq = 9 WHERE run_id = ?1 AND seq = 3",
            [clean as i64],
        )
        .unwrap();
    let out = workflow(&path, &["verify", &clean.to_string()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("record #9 does not read: it is stored as #9 but carries #3"),
        "{}",
        text(&out.stdout)
    );
}
