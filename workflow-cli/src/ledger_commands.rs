//! The commands that need only the ledger: `runs`, `show`, `verify`,
//! `export`, `diff`.

use std::io::Write;
use std::path::Path;

use workflow_core::ledger::{
    Ledger, LedgerError, LedgerRecord, SqliteLedger, Tampering, VerifyError,
};
use workflow_core::tool::ToolOutcome;
use workflow_core::{Endpoint, Mode, Receipt};

use crate::{BadInput, Command, say};

/// Opens the ledger at `path` for reading: a `postgres://` (or
/// `postgresql://`) URL, or a file, which must exist and be a ledger of a
/// format this library reads; nothing is ever written to either.
pub(crate) fn open(path: &Path) -> Result<Box<dyn Ledger>, BadInput> {
    if let Some(url) = path
        .to_str()
        .filter(|p| p.starts_with("postgres://") || p.starts_with("postgresql://"))
    {
        return open_postgres(url);
    }
    if !path.is_file() {
        return Err(BadInput(format!("no ledger file at {}", path.display())));
    }
    // Its errors name the file.
    SqliteLedger::open_read_only(path)
        .map(|l| Box::new(l) as Box<dyn Ledger>)
        .map_err(|e| BadInput(e.to_string()))
}

/// A PostgreSQL ledger, read-only: nothing is created or migrated, and the
/// session refuses writes.
#[cfg(feature = "postgres")]
fn open_postgres(url: &str) -> Result<Box<dyn Ledger>, BadInput> {
    workflow_postgres::PostgresLedger::connect_read_only(url)
        .map(|l| Box::new(l) as Box<dyn Ledger>)
        .map_err(|e| BadInput(e.to_string()))
}

#[cfg(not(feature = "postgres"))]
fn open_postgres(_: &str) -> Result<Box<dyn Ledger>, BadInput> {
    Err(BadInput(
        "this `workflow` binary was built without PostgreSQL support \
         (build workflow-cli with its `postgres` feature)"
            .into(),
    ))
}

/// The records of `run`, which must exist and read.
pub(crate) fn records(ledger: &dyn Ledger, run: u64) -> Result<Vec<LedgerRecord>, BadInput> {
    let records = ledger.records(run).map_err(|e| BadInput(e.to_string()))?;
    if records.is_empty() {
        let head = ledger.head(run).map_err(|e| BadInput(e.to_string()))?;
        return Err(BadInput(match head {
            Some((seq, _)) => format!(
                "run {run} has no records, though its head says #{seq} (`workflow verify {run}` reports it)"
            ),
            None => format!("no run {run} in this ledger (`workflow runs` lists them)"),
        }));
    }
    Ok(records)
}

/// What `runs` says about a run: `Ok((workflow, records, status))`, or
/// `Err` with why the run does not read.
fn summary(ledger: &dyn Ledger, run: u64) -> Result<Result<String, String>, BadInput> {
    match ledger.records(run) {
        Ok(records) if records.is_empty() => {
            let head = ledger.head(run);
            Ok(Err(match head {
                Ok(Some((seq, _))) => format!("no records, though its head says #{seq}"),
                Ok(None) => "no records".into(),
                Err(e) => e.to_string(),
            }))
        }
        Ok(records) => {
            let workflow = records.first().map_or("?", |r| r.workflow.as_str());
            let audit = audit_header(&records).map_or(String::new(), |h| format!("\t{h}"));
            Ok(Ok(format!(
                "{workflow}\t{} records\t{}{audit}",
                records.len(),
                status(&records)
            )))
        }
        Err(LedgerError::CorruptRecord { seq, why, .. }) => {
            Ok(Err(format!("record #{seq} does not read: {why}")))
        }
        Err(e) => Err(BadInput(e.to_string())),
    }
}

/// For a run recorded in audit mode (any record says so): a line that says
/// it and counts the verdicts, the failed checks let through.
pub(crate) fn audit_header(records: &[LedgerRecord]) -> Option<String> {
    if !records.iter().any(|r| r.mode == Mode::Audit) {
        return None;
    }
    let verdicts: usize = records
        .iter()
        .map(|r| {
            let receipt = match &r.receipt {
                Receipt::Audited { reasons } => reasons.len(),
                _ => 0,
            };
            let calls = r.turn.as_ref().map_or(0, |t| {
                t.tool_calls.iter().filter(|c| c.audit.is_some()).count()
            });
            receipt + calls
        })
        .sum();
    let first = records.iter().find(|r| {
        matches!(r.receipt, Receipt::Audited { .. })
            || r.turn
                .as_ref()
                .is_some_and(|t| t.tool_calls.iter().any(|c| c.audit.is_some()))
    });
    Some(match first {
        None => "AUDIT MODE: no check failed".to_owned(),
        Some(r) => format!(
            "AUDIT MODE: {verdicts} failed check{} let through, the first at #{}",
            if verdicts == 1 { "" } else { "s" },
            r.seq
        ),
    })
}

/// How a run ended, from its last record.
fn status(records: &[LedgerRecord]) -> String {
    match records.last() {
        None => "empty".into(),
        Some(r) => match (&r.receipt, &r.to) {
            (Receipt::Rejected { reason }, _) => {
                format!("rejected at {} -> {}: {reason}", r.from, r.to)
            }
            (Receipt::Escalated { reason }, _) => {
                format!("suspended at {} -> {}: {reason}", r.from, r.to)
            }
            (Receipt::TurnFailed { error }, _) => format!("failed in {}: {error}", r.to),
            (_, Endpoint::End) => "completed".into(),
            _ => format!("stopped in {} (resumable)", r.to),
        },
    }
}

/// One record on one line.
/// Whether two records carry the same payload: the same JSON, or (when
/// either does not read back, past the depth limit say) the same bytes.
fn same_payload(x: &LedgerRecord, y: &LedgerRecord) -> bool {
    match (x.payload_json(), y.payload_json()) {
        (Ok(a), Ok(b)) => a == b,
        _ => (x.payload_format, &x.payload) == (y.payload_format, &y.payload),
    }
}

/// The tool calls of the turn that produced `r`, one line each with its
/// arguments and its result or error, as recorded (`show --tools`).
fn tool_calls(r: &LedgerRecord) -> Vec<String> {
    let Some(turn) = &r.turn else {
        return Vec::new();
    };
    let loops = turn.model_calls.iter().flat_map(crate::model_loop::lines);
    loops
        .chain(turn.tool_calls.iter().map(|c| {
            let outcome = match &c.outcome {
                ToolOutcome::Ok { result, .. } => format!("-> {result}"),
                ToolOutcome::Failed { error } => {
                    format!("-> FAILED ({}): {}", error.kind, error.message)
                }
            };
            let attempts = if c.attempts > 1 {
                format!(" ({} attempts)", c.attempts)
            } else {
                String::new()
            };
            format!(
                "    tool #{} {}({}){attempts} {outcome}",
                c.index, c.tool, c.arguments
            )
        }))
        .collect()
}

pub(crate) fn line(r: &LedgerRecord) -> String {
    let receipt = match &r.receipt {
        Receipt::Pending => "pending".to_owned(),
        Receipt::Accepted => "accepted".to_owned(),
        Receipt::Rejected { reason } => format!("REJECTED: {reason}"),
        Receipt::Escalated { reason } => format!("ESCALATED: {reason}"),
        Receipt::TurnFailed { error } => format!("TURN FAILED: {error}"),
        Receipt::Approved { by, edited } => {
            format!("approved by {by}{}", if *edited { ", edited" } else { "" })
        }
        Receipt::Audited { reasons } => format!(
            "AUDIT: {}",
            reasons
                .iter()
                .map(|r| format!("would reject: {r}"))
                .collect::<Vec<_>>()
                .join("; ")
        ),
        // A receipt of a newer version of the library.
        other => format!("{other:?}"),
    };
    let calls = r.turn.as_ref().map_or(String::new(), |t| {
        let calls: Vec<String> = t
            .tool_calls
            .iter()
            .map(|c| match &c.outcome {
                ToolOutcome::Ok { .. } => format!("{} ok", c.tool),
                ToolOutcome::Failed { error } => format!("{} FAILED ({})", c.tool, error.kind),
            })
            .zip(&t.tool_calls)
            .map(|(said, c)| match &c.audit {
                Some(why) => format!("{said} (AUDIT: would refuse: {why})"),
                None => said,
            })
            .collect();
        let models: Vec<String> = t
            .model_calls
            .iter()
            .map(|c| {
                let outcome = match &c.outcome {
                    workflow_core::llm::ModelOutcome::Ok { .. } => "ok".to_owned(),
                    workflow_core::llm::ModelOutcome::Failed { error } => {
                        format!("FAILED ({})", error.kind)
                    }
                };
                let tries = match (c.attempts.len(), c.tools.is_empty()) {
                    (1, true) => String::new(),
                    (n, true) => format!(" in {n} attempts"),
                    (n, false) => {
                        format!(" in {n} step{} with tools", if n == 1 { "" } else { "s" })
                    }
                };
                format!("{} {outcome}{tries}", c.model)
            })
            .collect();
        let mut after = String::new();
        if !calls.is_empty() {
            after.push_str(&format!(" after tools: {}", calls.join(", ")));
        }
        if !models.is_empty() {
            after.push_str(&format!(" after models: {}", models.join(", ")));
        }
        after
    });
    let payload = r.payload_json().unwrap_or_else(|e| format!("<{e}>"));
    // The OpenTelemetry trace the transfer was recorded in, when it was.
    let trace = match r.trace_id.as_str() {
        "" => String::new(),
        id => format!(" trace {id} span {}", r.span_id),
    };
    format!(
        "#{} hop {} {} -> {} [{receipt}] {} {payload}{calls}{trace}",
        r.seq, r.hop, r.from, r.to, r.payload_type
    )
}

/// The line `show` prints first: the root invariants the run was pinned
/// to, as its first record carries them.
fn root_line(first: Option<&LedgerRecord>) -> String {
    match first.and_then(|r| r.root.as_deref()) {
        Some(root) => format!("root {root}"),
        None => "root (not recorded: pinned to nothing, or written before roots were recorded)"
            .to_owned(),
    }
}

/// Progress every 100 runs of a long operation, on standard error.
pub(crate) fn progress(err: &mut dyn Write, done: usize, total: usize, what: &str) {
    if total > 100 && done.is_multiple_of(100) {
        say(err, format_args!("{what} {done} of {total} runs"));
    }
}

/// Runs a ledger command: `Ok(false)` when a run does not verify (or, for
/// `runs`, does not read) or two runs differ.
pub(crate) fn run(
    path: &Path,
    command: Command,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<bool, BadInput> {
    let ledger = open(path)?;
    match command {
        Command::Runs => {
            let runs = ledger.runs().map_err(|e| BadInput(e.to_string()))?;
            let mut good = true;
            for run in runs {
                match summary(&*ledger, run)? {
                    Ok(summary) => say(out, format_args!("{run}\t{summary}")),
                    Err(why) => {
                        good = false;
                        say(out, format_args!("{run}\t?\tDOES NOT READ: {why}"));
                    }
                }
            }
            Ok(good)
        }
        Command::Show { run, tools } => {
            let records = records(&*ledger, run)?;
            // An audited run says so first, impossible to miss; then the
            // run's header: the root invariants it was pinned to.
            if let Some(header) = audit_header(&records) {
                say(out, header);
            }
            say(out, root_line(records.first()));
            for r in &records {
                say(out, line(r));
                // Where it stands in a fan-out: fork, branch, parent, the
                // branch's outcome (the join: every branch's).
                if let Some(branch) = crate::branches::line(r, &records) {
                    say(out, branch);
                }
                // What the turn did with leases (renewals asked and their
                // answers, revocations): always shown, like the receipt.
                for act in r.turn.iter().flat_map(|t| &t.leases) {
                    say(out, format_args!("    lease: {act}"));
                }
                if tools {
                    for call in tool_calls(r) {
                        say(out, call);
                    }
                }
            }
            // An operator's revocations, kept beside the records.
            let revoked = ledger
                .revocations(run)
                .map_err(|e| BadInput(e.to_string()))?;
            for r in revoked {
                let after = r
                    .after
                    .map_or("before any record".to_owned(), |s| format!("after #{s}"));
                say(
                    out,
                    format_args!(
                        "revoked by {}: the lease granted at #{} ({after})",
                        r.by, r.lease.seq
                    ),
                );
            }
            Ok(true)
        }
        Command::Verify { runs, .. } => {
            let named = !runs.is_empty();
            let runs = if named {
                runs
            } else {
                ledger.runs().map_err(|e| BadInput(e.to_string()))?
            };
            let total = runs.len();
            let mut good = true;
            for (i, run) in runs.into_iter().enumerate() {
                match ledger.verify_run(run) {
                    Ok(()) => say(out, format_args!("run {run}: ok")),
                    // A run named on the command line that the ledger
                    // has never seen (no record, no head).
                    Err(VerifyError::Tampered(Tampering::Empty)) if named => {
                        return Err(BadInput(format!(
                            "no run {run} in this ledger (`workflow runs` lists them)"
                        )));
                    }
                    Err(VerifyError::Tampered(tampering)) => {
                        good = false;
                        say(out, format_args!("run {run}: {tampering}"));
                    }
                    Err(e) => return Err(BadInput(format!("run {run}: {e}"))),
                }
                progress(err, i + 1, total, "verified");
            }
            Ok(good)
        }
        Command::Export { run } => {
            for r in records(&*ledger, run)? {
                let json = serde_json::to_string(&r).map_err(|e| BadInput(e.to_string()))?;
                say(out, json);
            }
            Ok(true)
        }
        Command::Diff { a, b } => {
            let (ra, rb) = (records(&*ledger, a)?, records(&*ledger, b)?);
            for (x, y) in ra.iter().zip(&rb) {
                let same = x.from == y.from
                    && x.to == y.to
                    && x.payload_type == y.payload_type
                    && same_payload(x, y)
                    && x.receipt == y.receipt
                    && x.lineage == y.lineage;
                if !same {
                    say(out, format_args!("runs differ at transition #{}:", x.seq));
                    say(out, format_args!("  {a}: {}", line(x)));
                    if let Some(branch) = crate::branches::line(x, &ra) {
                        say(out, format_args!("  {branch}"));
                    }
                    say(out, format_args!("  {b}: {}", line(y)));
                    if let Some(branch) = crate::branches::line(y, &rb) {
                        say(out, format_args!("  {branch}"));
                    }
                    return Ok(false);
                }
            }
            if ra.len() != rb.len() {
                let (short, long, n) = if ra.len() < rb.len() {
                    (a, b, ra.len())
                } else {
                    (b, a, rb.len())
                };
                say(
                    out,
                    format_args!(
                        "runs agree for {n} transitions, then {short} ends and {long} goes on"
                    ),
                );
                return Ok(false);
            }
            say(
                out,
                format_args!("runs {a} and {b} agree on all {} transitions", ra.len()),
            );
            Ok(true)
        }
        Command::Replay { .. }
        | Command::Schema { .. }
        | Command::Keygen { .. }
        | Command::Checkpoint { .. }
        | Command::Submit { .. }
        | Command::Worker { .. }
        | Command::Decide { .. }
        | Command::Canary { .. } => Err(BadInput(
            "this command is not a ledger command (a bug: please report it)".into(),
        )),
    }
}
