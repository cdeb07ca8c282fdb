//! The `workflow` command: read, verify, diff and replay the runs a ledger
//! recorded; export and check a workflow's published schemas.
//!
//! The `workflow` binary of this crate knows no workflow: it lists, shows,
//! verifies, exports and diffs the runs of any SQLite ledger. Replaying a
//! run and exporting schemas need the workflow's own types, so a project
//! builds its own small binary for them, with every command:
//!
//! ```no_run
//! # use workflow_core::prelude::*;
//! # #[workflow(entry = echo, output = String)]
//! # pub mod deploy {
//! #     use super::*;
//! #     #[agent(to = [END])]
//! #     async fn echo(s: String, _cx: echo::Context<'_>) -> Result<echo::Next, Reject> {
//! #         Ok(echo::Next::End(s))
//! #     }
//! # }
//! // src/bin/workflow-deploy.rs
//! fn main() -> std::process::ExitCode {
//!     // The executor the runs are replayed with: the root invariants the
//!     // runs were recorded with; the dependencies are never called (every
//!     // tool response comes from the record).
//!     workflow_cli::main_for(|| deploy::Workflow::new((), ()))
//! }
//! ```
//!
//! Exit codes scripts can rely on: [`exit::OK`] (0) when everything asked
//! for is fine, [`exit::DIFFERENT`] (1) when a run does not verify, two
//! runs differ, a replay diverges or published schemas drifted,
//! [`exit::BAD_INPUT`] (2) for bad input (a missing file, an unknown run, a
//! file that is not a ledger, a command this binary cannot run), with a
//! message on standard error. Progress on long operations goes to standard
//! error too. The commands that read a ledger open it read-only
//! (`SqliteLedger::open_read_only`): they never change the file.

#![warn(missing_docs)]

use std::cell::OnceCell;
use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use workflow_core::canary::{Canaries, Canary};
use workflow_core::ledger::LedgerRecord;
use workflow_core::{Executor, Publication, ReplayError, ReplayReport, Workflow};

mod branches;
mod canary_command;
mod checkpoint_commands;
mod ledger_commands;
mod model_loop;
mod queue_commands;
mod workflow_commands;

/// The exit codes.
pub mod exit {
    /// Everything asked for is fine.
    pub const OK: u8 = 0;
    /// A run does not verify (for `runs`: does not read), two runs
    /// differ, a replay diverges, or the published schemas drifted.
    pub const DIFFERENT: u8 = 1;
    /// Bad input: a missing or corrupt file, an unknown run, a command this
    /// binary cannot run. The message is on standard error.
    pub const BAD_INPUT: u8 = 2;
}

/// Read, verify, diff and replay the runs an SQLite ledger recorded;
/// export and check published schemas.
#[derive(Parser)]
#[command(name = "workflow", version)]
struct Cli {
    /// The ledger: an SQLite file written by `SqliteLedger`, or a
    /// `postgres://` URL of a `PostgresLedger` (feature `postgres`).
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
        /// Also prints each tool call under the record of its turn: its
        /// arguments and its result (or its error), as recorded.
        #[arg(long)]
        tools: bool,
    },
    /// Verifies the hash chain of the given runs (all runs by default);
    /// with `--checkpoint`, also that the ledger still holds every run as
    /// the signed checkpoint saw it (exit 1 naming each run rewritten, cut,
    /// rolled back or removed; exit 2 for a checkpoint whose signature does
    /// not verify with `--public-key`).
    Verify {
        /// The run ids.
        runs: Vec<u64>,
        /// A checkpoint file written by `workflow checkpoint`.
        #[arg(long, requires = "public_key")]
        checkpoint: Option<PathBuf>,
        /// The public key file (`KEY.pub` of `workflow keygen`) the
        /// checkpoint must be signed with.
        #[arg(long, requires = "checkpoint")]
        public_key: Option<PathBuf>,
    },
    /// Writes a new ed25519 key for checkpoints: the secret to OUT (keep it
    /// away from the ledger), the public key to OUT.pub. Never overwrites.
    Keygen {
        /// The secret key file.
        #[arg(long)]
        out: PathBuf,
    },
    /// Signs a checkpoint of the ledger's heads (every run verified first)
    /// with KEY and writes it to OUT.
    Checkpoint {
        /// The secret key file (from `workflow keygen`).
        #[arg(long)]
        key: PathBuf,
        /// The checkpoint file (replaced if it exists).
        #[arg(long)]
        out: PathBuf,
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
    /// Replays runs with this binary's workflow, tool responses served from
    /// the record, and names the first transition where each diverges (all
    /// runs of the workflow by default). Needs a binary built with
    /// `workflow_cli::main_for`.
    Replay {
        /// The run ids.
        runs: Vec<u64>,
        /// One JSON object per run instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Submits runs of this binary's workflow to a PostgreSQL ledger's
    /// queue (`--ledger postgres://...`), for workers to claim; prints each
    /// run id. Needs a binary built with `workflow_cli::main_for`.
    Submit {
        /// The run's input as JSON: a file, or `-` for standard input.
        input: PathBuf,
        /// The first run id (drawn from the clock by default).
        #[arg(long)]
        run: Option<u64>,
        /// How many runs of this input, with consecutive ids.
        #[arg(long, default_value_t = 1)]
        count: u64,
    },
    /// Claims and drives queued runs of this binary's workflow from a
    /// PostgreSQL ledger (`--ledger postgres://...`) until SIGINT or
    /// SIGTERM: progress on standard error, a summary on exit. Runs it
    /// holds at the stop finish for 10 s, then are handed back. Needs a
    /// binary built with `workflow_cli::main_for`, whose executor has the
    /// real dependencies.
    Worker {
        /// Runs driven at once.
        #[arg(long, default_value_t = 1)]
        concurrency: usize,
        /// How long a claim holds a run without a heartbeat, in ms (a dead
        /// worker's runs wait this long before another takes them over).
        #[arg(long, default_value_t = 30_000)]
        lease_ttl_ms: u64,
        /// Stops once no run of the workflow is queued or held.
        #[arg(long)]
        until_drained: bool,
        /// Only the summary, no line per run.
        #[arg(long)]
        quiet: bool,
    },
    /// Queues a person's decision on a suspended run of a PostgreSQL
    /// ledger (`--ledger postgres://...`): a worker wakes and applies it.
    Decide {
        /// The run id.
        run: u64,
        /// Who decides.
        #[arg(long)]
        by: String,
        /// Deliver the transfer as it is.
        #[arg(long)]
        approve: bool,
        /// Stop the run with this reason.
        #[arg(long)]
        reject: Option<String>,
        /// Deliver this payload (a JSON file, or `-`) instead.
        #[arg(long)]
        edit: Option<PathBuf>,
    },
    /// Exports or checks the published schemas, manifest, tool definitions
    /// and diagram of this binary's workflow. Needs a binary built with
    /// `workflow_cli::main_for`.
    Schema {
        #[command(subcommand)]
        action: SchemaAction,
    },
    /// Runs every canary of this binary's workflow through the model's tool
    /// loop and prints a table (tool, canary, PASS/FAIL/DRIFT, why); exit 1
    /// when one does not pass or a tool has none. By default a replay of
    /// RECORDING (the model's replies and the tools' responses as
    /// recorded: deterministic, no network); `--live` asks the executor's
    /// model (e.g. `OPENAI_BASE_URL`) and calls the real tools. Needs a
    /// binary built with `workflow_cli::main_with_canaries`.
    Canary {
        /// The recording: replayed, or with `--live --record` written.
        recording: Option<PathBuf>,
        /// Ask the executor's model and call the live tools.
        #[arg(long)]
        live: bool,
        /// Write what the live run saw to RECORDING (only if every canary
        /// passed).
        #[arg(long, requires = "live")]
        record: bool,
    },
}

#[derive(Subcommand)]
enum SchemaAction {
    /// Writes every file into DIR (creating it).
    Export {
        /// The folder.
        dir: PathBuf,
    },
    /// Compares the current files with those published in DIR; exit code 1
    /// names each that changed, is new or was removed.
    Check {
        /// The folder.
        dir: PathBuf,
    },
}

/// A failure the user must fix (exit code 2).
pub(crate) struct BadInput(pub(crate) String);

/// What the commands that need a workflow's own types use.
pub(crate) trait KnownWorkflow {
    /// The workflow's name, as its records carry it.
    fn name(&self) -> &'static str;
    /// Replays one run's records.
    fn replay(&self, records: &[LedgerRecord]) -> Result<ReplayReport, ReplayError>;
    /// What the workflow publishes.
    fn publication(&self) -> Publication;
    /// Submits runs of the workflow to the queue at `url`.
    fn submit(
        &self,
        url: &str,
        input: &str,
        first: Option<u64>,
        count: u64,
        out: &mut dyn Write,
    ) -> Result<bool, BadInput>;
    /// Runs a worker on the queue at `url`.
    fn work(
        &self,
        url: &str,
        options: &queue_commands::WorkerOptions,
        err: &mut dyn Write,
    ) -> Result<bool, BadInput>;
    /// Runs the workflow's canaries.
    fn canary(
        &self,
        options: &canary_command::CanaryOptions,
        out: &mut dyn Write,
    ) -> Result<bool, BadInput>;
}

/// Workflow `W`, its executor built at the first replay.
struct Known<W: Workflow, F> {
    make: F,
    executor: OnceCell<Executor<W>>,
    runtime: OnceCell<Result<tokio::runtime::Runtime, String>>,
    /// The workflow's canaries, for a binary built with
    /// [`main_with_canaries`].
    canaries: Option<fn() -> Vec<Canary<W>>>,
}

impl<W: Workflow, F: Fn() -> Executor<W>> Known<W, F> {
    /// The workflow made by `make` (on first use), with its canaries if the
    /// binary declares them.
    fn new(make: F, canaries: Option<fn() -> Vec<Canary<W>>>) -> Self {
        Known {
            make,
            executor: OnceCell::new(),
            runtime: OnceCell::new(),
            canaries,
        }
    }

    /// The runtime the commands drive the executor on, made once.
    fn runtime(&self) -> Result<&tokio::runtime::Runtime, String> {
        self.runtime
            .get_or_init(|| {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(|e| format!("no async runtime: {e}"))
    }
}

impl<W: Workflow, F: Fn() -> Executor<W>> KnownWorkflow for Known<W, F> {
    fn name(&self) -> &'static str {
        W::GRAPH.name
    }

    fn replay(&self, records: &[LedgerRecord]) -> Result<ReplayReport, ReplayError> {
        let runtime = self.runtime().map_err(|error| ReplayError::Input {
            run_id: records.first().map_or(0, |r| r.run_id),
            error,
        })?;
        let executor = self.executor.get_or_init(&self.make);
        runtime.block_on(executor.replay(records))
    }

    fn publication(&self) -> Publication {
        Publication::of::<W>()
    }

    fn submit(
        &self,
        url: &str,
        input: &str,
        first: Option<u64>,
        count: u64,
        out: &mut dyn Write,
    ) -> Result<bool, BadInput> {
        queue_commands::submit::<W>(url, input, first, count, out)
    }

    fn work(
        &self,
        url: &str,
        options: &queue_commands::WorkerOptions,
        err: &mut dyn Write,
    ) -> Result<bool, BadInput> {
        queue_commands::work(url, (self.make)(), options, err)
    }

    fn canary(
        &self,
        options: &canary_command::CanaryOptions,
        out: &mut dyn Write,
    ) -> Result<bool, BadInput> {
        let Some(canaries) = self.canaries else {
            return Err(BadInput(format!(
                "this binary knows no canaries of workflow `{}`: implement                  `workflow_core::canary::Canaries` for it and build the binary with                  `workflow_cli::main_with_canaries` (see the book's canaries chapter)",
                W::GRAPH.name
            )));
        };
        let runtime = self.runtime().map_err(BadInput)?;
        let executor = self.executor.get_or_init(&self.make);
        canary_command::canary(executor, &canaries(), runtime, options, out)
    }
}

/// The `workflow` command without a workflow: `runs`, `show`, `verify`,
/// `export`, `diff` on the process's arguments.
pub fn main() -> ExitCode {
    ExitCode::from(run(
        std::env::args_os(),
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
    ))
}

/// The `workflow` command for workflow `W`, every command included:
/// `replay` replays runs with the executor `executor` builds (at the first
/// replay), `schema` exports and checks what `W` publishes, and (feature
/// `postgres`) `submit` queues runs of `W` and `worker` drives them with an
/// executor `executor` builds — whose dependencies a worker really calls.
/// Call it from a small binary of your own (see the crate's documentation).
pub fn main_for<W: Workflow>(executor: impl Fn() -> Executor<W>) -> ExitCode {
    ExitCode::from(run_for(
        std::env::args_os(),
        executor,
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
    ))
}

/// [`main_for`] with `W`'s canaries: `workflow canary` runs them (replayed
/// from a recording, or live with the model the executor is given:
/// attach one with `Executor::with_model`, e.g. from `OPENAI_BASE_URL`).
pub fn main_with_canaries<W: Canaries>(executor: impl Fn() -> Executor<W>) -> ExitCode {
    ExitCode::from(run_with_canaries(
        std::env::args_os(),
        executor,
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
    ))
}

/// [`run_for`] with `W`'s canaries (see [`main_with_canaries`]).
pub fn run_with_canaries<W, I, T>(
    args: I,
    executor: impl Fn() -> Executor<W>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8
where
    W: Canaries,
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    dispatch(
        args,
        Some(&Known::new(executor, Some(W::canaries))),
        out,
        err,
    )
}

/// Runs the command line `args` (the program name first) without a
/// workflow: results to `out`, progress and errors to `err`; the exit code.
pub fn run<I, T>(args: I, out: &mut dyn Write, err: &mut dyn Write) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    dispatch(args, None, out, err)
}

/// Runs the command line `args` (the program name first) for workflow `W`
/// (see [`main_for`]): results to `out`, progress and errors to `err`; the
/// exit code.
pub fn run_for<W, I, T>(
    args: I,
    executor: impl Fn() -> Executor<W>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8
where
    W: Workflow,
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    dispatch(args, Some(&Known::new(executor, None)), out, err)
}

fn dispatch<I, T>(
    args: I,
    workflow: Option<&dyn KnownWorkflow>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) if e.use_stderr() => {
            // A usage error is bad input.
            let _ = write!(err, "{}", e.render());
            return exit::BAD_INPUT;
        }
        Err(e) => {
            // `--help`, `--version`: not errors.
            let _ = write!(out, "{}", e.render());
            return exit::OK;
        }
    };
    let outcome = match cli.command {
        Command::Replay { runs, json } => needs(workflow, "replay")
            .and_then(|w| workflow_commands::replay(&cli.ledger, w, &runs, json, out, err)),
        Command::Schema { action } => needs(workflow, "schema").and_then(|w| match action {
            SchemaAction::Export { dir } => workflow_commands::schema_export(w, &dir, out),
            SchemaAction::Check { dir } => workflow_commands::schema_check(w, &dir, out),
        }),
        Command::Canary {
            recording,
            live,
            record,
        } => needs(workflow, "canary").and_then(|w| {
            let options = canary_command::CanaryOptions {
                recording,
                live,
                record,
            };
            w.canary(&options, out)
        }),
        Command::Submit { input, run, count } => needs(workflow, "submit").and_then(|w| {
            let url = queue_commands::url(&cli.ledger, "submit")?;
            let input = queue_commands::read_input(&input)?;
            w.submit(&url, &input, run, count, out)
        }),
        Command::Worker {
            concurrency,
            lease_ttl_ms,
            until_drained,
            quiet,
        } => needs(workflow, "worker").and_then(|w| {
            let url = queue_commands::url(&cli.ledger, "worker")?;
            let options = queue_commands::WorkerOptions {
                concurrency,
                lease_ttl_ms,
                until_drained,
                quiet,
            };
            w.work(&url, &options, err)
        }),
        Command::Decide {
            run,
            by,
            approve,
            reject,
            edit,
        } => queue_commands::url(&cli.ledger, "decide").and_then(|url| {
            let decision = queue_commands::decision(by, approve, reject, edit.as_deref())?;
            queue_commands::decide(&url, run, &decision, out)
        }),
        Command::Keygen { out: path } => checkpoint_commands::keygen(&path, out),
        Command::Checkpoint { key, out: path } => {
            checkpoint_commands::checkpoint(&cli.ledger, &key, &path, out)
        }
        Command::Verify {
            runs,
            checkpoint: Some(checkpoint),
            public_key: Some(public_key),
        } => checkpoint_commands::verify(&cli.ledger, runs, &checkpoint, &public_key, out, err),
        command => ledger_commands::run(&cli.ledger, command, out, err),
    };
    match outcome {
        Ok(true) => exit::OK,
        Ok(false) => exit::DIFFERENT,
        Err(BadInput(message)) => {
            let _ = writeln!(err, "workflow: {message}");
            exit::BAD_INPUT
        }
    }
}

/// The workflow a command needs, or why this binary cannot run it.
fn needs<'w>(
    workflow: Option<&'w dyn KnownWorkflow>,
    command: &str,
) -> Result<&'w dyn KnownWorkflow, BadInput> {
    workflow.ok_or_else(|| {
        BadInput(format!(
            "`{command}` needs your workflow's types, which this generic binary does not have: \
             build a binary that calls `workflow_cli::main_for` (see the book's ledger chapter)"
        ))
    })
}

/// Writes a line to `out`; output that cannot be written (a closed pipe)
/// is not worth a panic.
pub(crate) fn say(out: &mut dyn Write, line: impl std::fmt::Display) {
    let _ = writeln!(out, "{line}");
}
