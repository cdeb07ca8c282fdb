//! The tool-call journal in an SQLite file, edited by hand: a journaled
//! result changed in the file is refused when the run resumes (before, it
//! was served to the resumed turn and ended inside the hash chain), and
//! `verify` names the run, the turn and the call.

use std::sync::Arc;
use std::time::Duration;

use examples::payment::{Provider, order, payment};
use workflow_core::RunError;
use workflow_core::ledger::{
    JournalProblem, JournalTampering, Ledger, SqliteLedger, Tampering, VerifyError,
};

use crate::fixtures::{Scratch, scratch};

/// A payment run cut while it mails the receipt (the charge journaled),
/// in a fresh ledger file under `name`: the file, the provider's folder
/// and the run.
async fn cut_run(name: &str) -> (std::path::PathBuf, Scratch, u64) {
    let dir = scratch(name);
    let path = dir.join("runs.db");
    let ledger = Arc::new(SqliteLedger::open(&path).expect("opens"));
    let wf = payment::Workflow::new((), provider(&dir, Duration::from_secs(3600)))
        .with_ledger(ledger.clone());
    let cut = tokio::time::timeout(Duration::from_millis(300), wf.run(order())).await;
    assert!(cut.is_err(), "the run waits on the mail");
    let run = ledger.runs().expect("lists")[0];
    assert_eq!(ledger.records(run).expect("reads").len(), 2);
    assert_eq!(ledger.tool_calls(run, 2).expect("reads").len(), 1);
    (path, dir, run)
}

fn provider(dir: &std::path::Path, mail_delay: Duration) -> Provider {
    Provider {
        requests: dir.join("requests.log"),
        charges: dir.join("charges.log"),
        mail_delay,
    }
}

/// Runs `sql` on the file, as someone with write access would.
fn edit(path: &std::path::Path, sql: &str) {
    let conn = rusqlite::Connection::open(path).expect("opens");
    let changed = conn.execute(sql, []).expect("edits");
    assert_eq!(changed, 1, "one journal entry edited");
}

#[tokio::test(flavor = "current_thread")]
async fn a_journaled_result_edited_in_the_file_is_refused_on_resume() {
    let (path, dir, run) = cut_run("journal-edited").await;
    edit(
        &path,
        "UPDATE tool_calls SET call = replace(call, 'ch_acme_4000', 'ch_evil_9999')",
    );
    let ledger = Arc::new(SqliteLedger::open(&path).expect("reopens"));
    let expected = JournalTampering {
        run_id: run,
        turn_seq: 2,
        index: 0,
        problem: JournalProblem::Digest,
    };
    assert_eq!(
        ledger.verify_run(run),
        Err(VerifyError::Tampered(Tampering::Journal(expected.clone())))
    );
    let wf = payment::Workflow::new((), provider(&dir, Duration::ZERO)).with_ledger(ledger.clone());
    let aborted = wf.resume(run).await.expect_err("refused");
    assert_eq!(aborted.error, RunError::Journal(expected));
    assert_eq!(
        aborted.error.to_string(),
        format!(
            "the run cannot be resumed: run {run}, turn #2, tool call 0: its result does not match its digest: the result was edited"
        )
    );
    let records = ledger.records(run).expect("reads");
    assert_eq!(
        records.len(),
        2,
        "nothing recorded: the forged result is not in the chain"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn an_entry_written_before_entries_were_bound_is_still_served() {
    // The journal of a file written by the previous version: the bare
    // call, without its binding hash. Its digest is still checked.
    let (path, dir, run) = cut_run("journal-unbound").await;
    let charges = std::fs::read_to_string(dir.join("charges.log")).expect("charged");
    edit(
        &path,
        "UPDATE tool_calls SET call = json_extract(call, '$.call')",
    );
    let ledger = Arc::new(SqliteLedger::open(&path).expect("reopens"));
    let entries = ledger.tool_calls(run, 2).expect("reads the old form");
    assert_eq!(entries[0].hash, "", "no binding");
    ledger.verify_run(run).expect("verifies");
    let wf = payment::Workflow::new((), provider(&dir, Duration::ZERO)).with_ledger(ledger.clone());
    let done = wf.resume(run).await.expect("resumes");
    assert_eq!(done.output.charge_id, "ch_acme_4000");
    assert_eq!(
        std::fs::read_to_string(dir.join("requests.log")).expect("requested"),
        charges
            .lines()
            .map(|l| l.split(' ').take(2).collect::<Vec<_>>().join(" ") + "\n")
            .collect::<String>(),
        "served from the journal: not requested again"
    );
    ledger.verify_run(run).expect("verifies");
}
