//! `workflow canary`: runs the workflow's canaries, replayed from a
//! recording (the default, for CI) or live against the executor's model
//! and tools (`--live`), prints the table, and with `--record` writes what a
//! live run saw as the new recording.

use std::io::Write;
use std::path::PathBuf;

use workflow_core::canary::{Canary, CanaryMode, CanaryRecording};
use workflow_core::{Executor, Workflow};

use crate::{BadInput, say};

/// The options of `workflow canary`.
pub(crate) struct CanaryOptions {
    /// The recording file.
    pub(crate) recording: Option<PathBuf>,
    /// Live: the executor's model and dependencies.
    pub(crate) live: bool,
    /// Write the live run's recording to `recording`.
    pub(crate) record: bool,
}

/// Runs `canaries` with `executor`: `Ok(false)` when one did not pass (or
/// a tool has none).
pub(crate) fn canary<W: Workflow>(
    executor: &Executor<W>,
    canaries: &[Canary<W>],
    runtime: &tokio::runtime::Runtime,
    options: &CanaryOptions,
    out: &mut dyn Write,
) -> Result<bool, BadInput> {
    if options.record && !options.live {
        return Err(BadInput(
            "`--record` writes what a live run saw: add `--live` (a replay records nothing new)"
                .into(),
        ));
    }
    let path = options.recording.as_deref();
    let previous = match path {
        // Live, a recording not written yet is no error: `--record` writes it.
        Some(path) if options.live && !path.exists() => None,
        Some(path) => Some(CanaryRecording::read(path).map_err(BadInput)?),
        None if options.record => {
            return Err(BadInput(
                "`--record` needs the file to write: `workflow canary --live --record FILE`".into(),
            ));
        }
        None => None,
    };
    let mode = match (&previous, options.live) {
        (_, true) => CanaryMode::Live {
            previous: previous.as_ref(),
        },
        (Some(recording), false) => CanaryMode::Replay(recording),
        (None, false) => {
            return Err(BadInput(
                "a replay needs the canaries' recording: `workflow canary FILE` (write one with `workflow canary --live --record FILE`)"
                    .into(),
            ));
        }
    };
    let report = runtime
        .block_on(workflow_core::canary::run(executor, canaries, mode))
        .map_err(BadInput)?;
    say(out, &report);
    if options.record
        && let Some(path) = path
    {
        match &report.recording {
            Some(recording) if report.passed() => {
                recording.write(path).map_err(BadInput)?;
                say(
                    out,
                    format_args!(
                        "recorded {} canaries of `{}` to {}",
                        recording.canaries.len(),
                        W::GRAPH.name,
                        path.display()
                    ),
                );
            }
            _ => say(
                out,
                format_args!(
                    "not recorded: a recording holds passing canaries only; {} unchanged",
                    path.display()
                ),
            ),
        }
    }
    Ok(report.passed())
}
