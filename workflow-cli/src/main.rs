//! `workflow`: read the runs an SQLite ledger recorded.
//!
//! Exit codes scripts can rely on: 0 when everything asked for is fine, 1
//! when a run does not verify or two runs differ, 2 for bad input (a missing
//! file, an unknown run, a file that is not a ledger).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use workflow_core::ledger::{Ledger, LedgerRecord, SqliteLedger};

/// Read the runs an SQLite ledger recorded: list, show, verify, export, diff.
#[derive(Parser)]
#[command(name = "workflow", version)]
struct Cli {
    /// The ledger file (an SQLite file written by `SqliteLedger`).
    #[arg(long, short, global = true, default_value = "runs.db")]
    ledger: PathBuf,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Lists the runs: id, workflow, records, how each ended.
    Runs,
    /// Shows the records of a run, one per line, payloads as JSON (with the
    /// OpenTelemetry trace and span of each, when the run was traced).
    Show {
        /// The run id.
        run: u64,
    },
    /// Verifies the hash chain of the given runs (all runs by default).
    Verify {
        /// The run ids.
        runs: Vec<u64>,
    },
    /// Writes a run's records as JSON Lines, exactly as stored.
    Export {
        /// The run id.
        run: u64,
    },
    /// Compares two runs transition by transition and names the first
    /// difference (sender, receiver, payload or receipt).
    Diff {
        /// The first run.
        a: u64,
        /// The second run.
        b: u64,
    },
}

/// A failure the user must fix (exit code 2).
struct BadInput(String);

fn open(path: &Path) -> Result<SqliteLedger, BadInput> {
    if !path.is_file() {
        return Err(BadInput(format!("no ledger file at {}", path.display())));
    }
    SqliteLedger::open(path).map_err(|e| BadInput(format!("{}: {e}", path.display())))
}

fn records(ledger: &SqliteLedger, run: u64) -> Result<Vec<LedgerRecord>, BadInput> {
    let records = ledger.records(run).map_err(|e| BadInput(e.to_string()))?;
    if records.is_empty() {
        return Err(BadInput(format!(
            "no run {run} in this ledger (`workflow runs` lists them)"
        )));
    }
    Ok(records)
}

/// How a run ended, from its last record.
fn status(records: &[LedgerRecord]) -> String {
    match records.last() {
        None => "empty".into(),
        Some(r) => match (&r.receipt, &r.to) {
            (workflow_core::Receipt::Rejected { reason }, _) => {
                format!("rejected at {} -> {}: {reason}", r.from, r.to)
            }
            (workflow_core::Receipt::Escalated { reason }, _) => {
                format!("suspended at {} -> {}: {reason}", r.from, r.to)
            }
            (workflow_core::Receipt::TurnFailed { error }, _) => {
                format!("failed in {}: {error}", r.to)
            }
            (_, workflow_core::Endpoint::End) => "completed".into(),
            _ => format!("stopped in {} (resumable)", r.to),
        },
    }
}

fn line(r: &LedgerRecord) -> String {
    let receipt = match &r.receipt {
        workflow_core::Receipt::Pending => "pending".to_owned(),
        workflow_core::Receipt::Accepted => "accepted".to_owned(),
        workflow_core::Receipt::Rejected { reason } => format!("REJECTED: {reason}"),
        workflow_core::Receipt::Escalated { reason } => format!("ESCALATED: {reason}"),
        workflow_core::Receipt::TurnFailed { error } => format!("TURN FAILED: {error}"),
        workflow_core::Receipt::Approved { by, edited } => {
            format!("approved by {by}{}", if *edited { ", edited" } else { "" })
        }
    };
    let calls = r.turn.as_ref().map_or(String::new(), |t| {
        let calls: Vec<String> = t
            .tool_calls
            .iter()
            .map(|c| match &c.outcome {
                workflow_core::tool::ToolOutcome::Ok { .. } => format!("{} ok", c.tool),
                workflow_core::tool::ToolOutcome::Failed { error } => {
                    format!("{} FAILED ({})", c.tool, error.kind)
                }
            })
            .collect();
        let models: Vec<String> = t
            .model_calls
            .iter()
            .map(|c| {
                let outcome = match &c.outcome {
                    workflow_core::model::ModelOutcome::Ok { .. } => "ok".to_owned(),
                    workflow_core::model::ModelOutcome::Failed { error } => {
                        format!("FAILED ({})", error.kind)
                    }
                };
                let tries = match c.attempts.len() {
                    1 => String::new(),
                    n => format!(" in {n} attempts"),
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

fn run(cli: Cli) -> Result<bool, BadInput> {
    let ledger = open(&cli.ledger)?;
    match cli.command {
        Command::Runs => {
            let runs = ledger.runs().map_err(|e| BadInput(e.to_string()))?;
            for run in runs {
                let records = records(&ledger, run)?;
                let workflow = records.first().map_or("?", |r| r.workflow.as_str());
                println!(
                    "{run}\t{workflow}\t{} records\t{}",
                    records.len(),
                    status(&records)
                );
            }
            Ok(true)
        }
        Command::Show { run } => {
            for r in records(&ledger, run)? {
                println!("{}", line(&r));
            }
            Ok(true)
        }
        Command::Verify { runs } => {
            let runs = if runs.is_empty() {
                ledger.runs().map_err(|e| BadInput(e.to_string()))?
            } else {
                runs
            };
            let total = runs.len();
            let mut good = true;
            for (i, run) in runs.into_iter().enumerate() {
                records(&ledger, run)?;
                match ledger
                    .verify_run(run)
                    .map_err(|e| BadInput(e.to_string()))?
                {
                    Ok(()) => println!("run {run}: ok"),
                    Err(tampering) => {
                        good = false;
                        println!("run {run}: {tampering}");
                    }
                }
                if total > 100 && (i + 1) % 100 == 0 {
                    eprintln!("verified {} of {total} runs", i + 1);
                }
            }
            Ok(good)
        }
        Command::Export { run } => {
            for r in records(&ledger, run)? {
                let json = serde_json::to_string(&r).map_err(|e| BadInput(e.to_string()))?;
                println!("{json}");
            }
            Ok(true)
        }
        Command::Diff { a, b } => {
            let (ra, rb) = (records(&ledger, a)?, records(&ledger, b)?);
            for (x, y) in ra.iter().zip(&rb) {
                let same = x.from == y.from
                    && x.to == y.to
                    && x.payload_type == y.payload_type
                    && x.payload_json().ok() == y.payload_json().ok()
                    && x.receipt == y.receipt;
                if !same {
                    println!("runs differ at transition #{}:", x.seq);
                    println!("  {a}: {}", line(x));
                    println!("  {b}: {}", line(y));
                    return Ok(false);
                }
            }
            if ra.len() != rb.len() {
                let (short, long, n) = if ra.len() < rb.len() {
                    (a, b, ra.len())
                } else {
                    (b, a, rb.len())
                };
                println!("runs agree for {n} transitions, then {short} ends and {long} goes on");
                return Ok(false);
            }
            println!("runs {a} and {b} agree on all {} transitions", ra.len());
            Ok(true)
        }
    }
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(BadInput(message)) => {
            eprintln!("workflow: {message}");
            ExitCode::from(2)
        }
    }
}
