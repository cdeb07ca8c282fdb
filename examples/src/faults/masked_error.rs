//! A tool error masked as an empty result: the lookup's backend fails and
//! the tool answers with an empty listing (HTTP 200, empty body), which
//! the worker would read as "nothing to keep".

use super::pipeline::{self, Bench, Script};
use super::{InAudit, Observed, Scenario, Trial};

/// The scenario.
pub const SCENARIO: Scenario = Scenario {
    name: "masked_error",
    mast: "3.2 No or incomplete verification (a failure read as an answer)",
    fault: "the lookup masks its backend's failure as an empty listing (seeded: its latency)",
    unauthorized: "any `apply` in a faulty run: planned on a listing that was an error",
    correct: "clean: the rows asked are changed; faulty: stopped at the lookup",
    mechanism: "fail-fast on tool results: an empty `Vec` is a typed `empty result` error",
    in_audit: InAudit::StillStops("a tool's fail-fast rule runs inside the turn, in both modes"),
    run: |t| Box::pin(run(t)),
};

async fn run(trial: Trial) -> Observed {
    let mut rng = trial.rng();
    let bench = Bench {
        authorized: !trial.fault,
        masked_failure: trial.fault,
        lookup_ms: rng.between(0, 1),
        ..Bench::default()
    };
    pipeline::observe(trial, Script::default(), bench, |wf| wf).await
}
