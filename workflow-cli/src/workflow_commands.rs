//! The commands that need a workflow's own types: `replay` and `schema`.

use std::io::Write;
use std::path::Path;

use workflow_core::ReplayError;
use workflow_core::ledger::{LedgerError, Tampering, VerifyError};

use crate::ledger_commands::{open, progress, records};
use crate::{BadInput, KnownWorkflow, say};

/// Replays `runs` (all runs of the workflow when empty): `Ok(false)` when a
/// run diverges or does not verify.
pub(crate) fn replay(
    path: &Path,
    workflow: &dyn KnownWorkflow,
    runs: &[u64],
    json: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<bool, BadInput> {
    let ledger = open(path)?;
    let named = !runs.is_empty();
    let runs = if named {
        runs.to_vec()
    } else {
        ledger.runs().map_err(|e| BadInput(e.to_string()))?
    };
    let total = runs.len();
    let (mut replayed, mut identical, mut others) = (0, 0, 0);
    let mut good = true;
    for (i, run) in runs.into_iter().enumerate() {
        let records = match ledger.records(run) {
            Ok(records) if !records.is_empty() => records,
            // Records that do not read, or none under a head: reported as
            // `verify` reports them, whichever workflow recorded the run.
            Ok(_) | Err(LedgerError::CorruptRecord { .. }) => {
                match ledger.verify_run(run) {
                    Err(VerifyError::Tampered(Tampering::Empty)) if named => {
                        return Err(BadInput(format!(
                            "no run {run} in this ledger (`workflow runs` lists them)"
                        )));
                    }
                    Err(VerifyError::Tampered(tampering)) => {
                        good = false;
                        say(out, format_args!("run {run}: {tampering}"));
                        continue;
                    }
                    Err(e) => return Err(BadInput(format!("run {run}: {e}"))),
                    // Written in between: read again.
                    Ok(()) => records(&*ledger, run)?,
                }
            }
            Err(e) => return Err(BadInput(e.to_string())),
        };
        let recorded_by = records.first().map_or("", |r| r.workflow.as_str());
        if recorded_by != workflow.name() {
            if named {
                return Err(BadInput(format!(
                    "run {run} was recorded by workflow `{recorded_by}`; this binary replays `{}`",
                    workflow.name()
                )));
            }
            others += 1;
            continue;
        }
        // A run that does not verify is reported like `verify` reports it.
        match ledger.verify_run(run) {
            Ok(()) => {}
            Err(VerifyError::Tampered(tampering)) => {
                good = false;
                say(out, format_args!("run {run}: {tampering}"));
                continue;
            }
            Err(e) => return Err(BadInput(format!("run {run}: {e}"))),
        }
        let report = match workflow.replay(&records) {
            Ok(report) => report,
            Err(ReplayError::Tampered { tampering, .. }) => {
                good = false;
                say(out, format_args!("run {run}: {tampering}"));
                continue;
            }
            // The workflow no longer reads the run's input: it differs at
            // the first transition.
            Err(e @ ReplayError::Input { .. }) => {
                good = false;
                say(out, format_args!("run {run} cannot be replayed: {e}"));
                continue;
            }
            Err(e) => return Err(BadInput(e.to_string())),
        };
        replayed += 1;
        if report.is_identical() {
            identical += 1;
        } else {
            good = false;
        }
        if json {
            let line = serde_json::to_string(&report).map_err(|e| BadInput(e.to_string()))?;
            say(out, line);
        } else {
            say(out, &report);
        }
        progress(err, i + 1, total, "replayed");
    }
    if !json {
        let skipped = match others {
            0 => String::new(),
            n => format!("; {n} runs of other workflows skipped"),
        };
        say(
            err,
            format_args!(
                "{replayed} runs of `{}` replayed, {identical} identically{skipped}",
                workflow.name()
            ),
        );
    }
    Ok(good)
}

/// Writes the workflow's publication into `dir`.
pub(crate) fn schema_export(
    workflow: &dyn KnownWorkflow,
    dir: &Path,
    out: &mut dyn Write,
) -> Result<bool, BadInput> {
    let written = workflow
        .publication()
        .export(dir)
        .map_err(|e| BadInput(format!("cannot write to {}: {e}", dir.display())))?;
    say(
        out,
        format_args!(
            "wrote {} files for workflow `{}` to {}",
            written.len(),
            workflow.name(),
            dir.display()
        ),
    );
    Ok(true)
}

/// Compares the workflow's publication with the copy in `dir`: `Ok(false)`
/// when it drifted.
pub(crate) fn schema_check(
    workflow: &dyn KnownWorkflow,
    dir: &Path,
    out: &mut dyn Write,
) -> Result<bool, BadInput> {
    if !dir.is_dir() {
        return Err(BadInput(format!(
            "no published schemas at {} (`workflow schema export {}` writes them)",
            dir.display(),
            dir.display()
        )));
    }
    let publication = workflow.publication();
    match publication.check(dir) {
        Ok(()) => {
            say(
                out,
                format_args!(
                    "the {} published files of workflow `{}` in {} are current",
                    publication.len(),
                    workflow.name(),
                    dir.display()
                ),
            );
            Ok(true)
        }
        Err(drift) => {
            say(out, drift);
            Ok(false)
        }
    }
}
