//! The commands of many workers on PostgreSQL (feature `postgres`):
//! `submit` runs to the queue, `decide` on a suspended run from anywhere,
//! and `worker`, which claims and drives runs until it is stopped.

use std::io::Write;
use std::path::Path;

use workflow_core::{Decision, Executor, Workflow};

use crate::BadInput;

/// What `workflow worker` was asked for.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) struct WorkerOptions {
    /// Runs driven at once.
    pub(crate) concurrency: usize,
    /// The lease's term, in ms.
    pub(crate) lease_ttl_ms: u64,
    /// Stop once no run of the workflow is queued or held.
    pub(crate) until_drained: bool,
    /// No line per event, only the summary.
    pub(crate) quiet: bool,
}

/// The `postgres://` URL the ledger option names, or why a queue command
/// cannot run on it.
pub(crate) fn url(ledger: &Path, command: &str) -> Result<String, BadInput> {
    ledger
        .to_str()
        .filter(|p| p.starts_with("postgres://") || p.starts_with("postgresql://"))
        .map(str::to_owned)
        .ok_or_else(|| {
            BadInput(format!(
                "`{command}` works on a PostgreSQL ledger's queue: pass `--ledger postgres://...` \
                 (an SQLite ledger has no queue; run there with `Executor::run`)"
            ))
        })
}

/// Reads the JSON input `source` names: a file, or `-` for standard input.
pub(crate) fn read_input(source: &Path) -> Result<String, BadInput> {
    if source == Path::new("-") {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
            .map_err(|e| BadInput(format!("cannot read the input from standard input: {e}")))?;
        Ok(text)
    } else {
        std::fs::read_to_string(source)
            .map_err(|e| BadInput(format!("cannot read the input {}: {e}", source.display())))
    }
}

/// The decision `workflow decide` was given.
pub(crate) fn decision(
    by: String,
    approve: bool,
    reject: Option<String>,
    edit: Option<&Path>,
) -> Result<Decision, BadInput> {
    match (approve, reject, edit) {
        (true, None, None) => Ok(Decision::Approve { by }),
        (false, Some(note), None) => Ok(Decision::Reject { by, note }),
        (false, None, Some(file)) => {
            let text = read_input(file)?;
            let payload = serde_json::from_str(&text).map_err(|e| {
                BadInput(format!(
                    "the edited payload {} is not JSON: {e}",
                    file.display()
                ))
            })?;
            Ok(Decision::Edit { by, payload })
        }
        _ => Err(BadInput(
            "say exactly one of `--approve`, `--reject NOTE` or `--edit FILE`".into(),
        )),
    }
}

#[cfg(feature = "postgres")]
mod enabled {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use workflow_postgres::{PostgresLedger, Settle, Work, Worker, WorkerEvent};

    use super::*;
    use crate::say;

    fn connect(url: &str) -> Result<PostgresLedger, BadInput> {
        PostgresLedger::connect(url).map_err(|e| BadInput(e.to_string()))
    }

    /// Queues `decision` on suspended run `run`; `false` when the run is not
    /// waiting for one.
    pub(crate) fn decide(
        url: &str,
        run: u64,
        decision: &Decision,
        out: &mut dyn Write,
    ) -> Result<bool, BadInput> {
        let ledger = connect(url)?;
        let queued = ledger
            .decide(run, decision)
            .map_err(|e| BadInput(e.to_string()))?;
        if queued {
            say(
                out,
                format_args!("run {run}: decision queued; a worker applies it"),
            );
        } else {
            say(
                out,
                format_args!(
                    "run {run} is not suspended in the queue, or a decision already waits: nothing queued"
                ),
            );
        }
        Ok(queued)
    }

    /// Submits `count` runs of `W` with `input` (checked against `W`'s
    /// input type first), from run id `first` (or one drawn from the clock).
    pub(crate) fn submit<W: Workflow>(
        url: &str,
        input: &str,
        first: Option<u64>,
        count: u64,
        out: &mut dyn Write,
    ) -> Result<bool, BadInput> {
        serde_json::from_str::<W::Input>(input).map_err(|e| {
            BadInput(format!(
                "the input is not a `{}` (the workflow's input): {e}",
                W::GRAPH.input
            ))
        })?;
        let ledger = connect(url)?;
        let first = first.unwrap_or_else(drawn_id);
        let mut fresh = true;
        for n in 0..count {
            let run = first.wrapping_add(n);
            let new = ledger
                .submit(run, W::GRAPH.name, input)
                .map_err(|e| BadInput(e.to_string()))?;
            if new {
                say(out, format_args!("{run}\tsubmitted"));
            } else {
                fresh = false;
                say(out, format_args!("{run}\talready submitted: unchanged"));
            }
        }
        Ok(fresh)
    }

    /// A run id from the clock and the process (as the executor draws
    /// them), kept below 2^63 so that it reads the same everywhere.
    fn drawn_id() -> u64 {
        let micros = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as u64);
        ((micros << 12) ^ u64::from(std::process::id())) & (u64::MAX >> 1)
    }

    fn line(event: &WorkerEvent) -> String {
        match event {
            WorkerEvent::Claimed {
                run_id,
                token,
                work,
            } => {
                let work = match work {
                    Work::Start => "start",
                    Work::Resume => "resume",
                    Work::Decide => "decide",
                };
                format!("run {run_id}: claimed (token {token}) to {work}")
            }
            WorkerEvent::Settled {
                run_id,
                settle,
                outcome,
            } => {
                let settle = match settle {
                    Settle::Done => "done",
                    Settle::Suspended => "suspended",
                    Settle::Queued => "queued",
                };
                format!("run {run_id}: {settle}: {outcome}")
            }
            WorkerEvent::Fenced { run_id } => {
                format!(
                    "run {run_id}: lease lost to another worker; dropped, nothing more committed"
                )
            }
            WorkerEvent::HandedBack { run_id } => format!("run {run_id}: handed back"),
            WorkerEvent::Error(e) => format!("error: {e}"),
        }
    }

    /// Runs a worker for `executor` until SIGINT/SIGTERM (or drained),
    /// progress lines and the summary to `err`.
    pub(crate) fn work<W: Workflow>(
        url: &str,
        executor: Executor<W>,
        options: &WorkerOptions,
        err: &mut dyn Write,
    ) -> Result<bool, BadInput> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| BadInput(format!("no async runtime: {e}")))?;
        let ledger = Arc::new(connect(url)?);
        let lines = Arc::new(Mutex::new(Vec::<String>::new()));
        let mut worker = Worker::new(executor, ledger, url)
            .concurrency(options.concurrency)
            .lease_ttl(Duration::from_millis(options.lease_ttl_ms));
        if options.until_drained {
            worker = worker.until_drained();
        }
        if !options.quiet {
            let lines = lines.clone();
            worker = worker.on_event(move |e| {
                lines
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(line(e))
            });
        }
        say(
            err,
            format_args!(
                "worker: {} on {} run(s) at once; stop with Ctrl-C or SIGTERM",
                W::GRAPH.name,
                options.concurrency
            ),
        );
        let drain = |err: &mut dyn Write| {
            let pending = std::mem::take(&mut *lines.lock().unwrap_or_else(|p| p.into_inner()));
            for l in pending {
                say(err, format_args!("worker: {l}"));
            }
        };
        let summary = runtime.block_on(async {
            let run = worker.run_until(stop_signal());
            tokio::pin!(run);
            loop {
                tokio::select! {
                    summary = &mut run => break summary,
                    () = tokio::time::sleep(Duration::from_millis(200)) => drain(err),
                }
            }
        });
        drain(err);
        let summary = summary.map_err(|e| BadInput(e.to_string()))?;
        say(err, format_args!("worker: {summary}"));
        Ok(summary.errors == 0)
    }

    /// Completes at SIGINT or SIGTERM.
    async fn stop_signal() {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            match signal(SignalKind::terminate()) {
                Ok(mut term) => {
                    tokio::select! {
                        _ = tokio::signal::ctrl_c() => {}
                        _ = term.recv() => {}
                    }
                }
                Err(_) => {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

#[cfg(feature = "postgres")]
pub(crate) use enabled::{decide, submit, work};

#[cfg(not(feature = "postgres"))]
mod disabled {
    use super::*;

    fn unsupported() -> BadInput {
        BadInput(
            "this `workflow` binary was built without PostgreSQL support \
             (build workflow-cli with its `postgres` feature)"
                .into(),
        )
    }

    pub(crate) fn decide(
        _: &str,
        _: u64,
        _: &Decision,
        _: &mut dyn Write,
    ) -> Result<bool, BadInput> {
        Err(unsupported())
    }

    // The same signature as with the feature: `W` is the caller's.
    #[allow(clippy::extra_unused_type_parameters)]
    pub(crate) fn submit<W: Workflow>(
        _: &str,
        _: &str,
        _: Option<u64>,
        _: u64,
        _: &mut dyn Write,
    ) -> Result<bool, BadInput> {
        Err(unsupported())
    }

    pub(crate) fn work<W: Workflow>(
        _: &str,
        _: Executor<W>,
        _: &WorkerOptions,
        _: &mut dyn Write,
    ) -> Result<bool, BadInput> {
        Err(unsupported())
    }
}

#[cfg(not(feature = "postgres"))]
pub(crate) use disabled::{decide, submit, work};
