//! A stop part with nothing checkable: the worker tells the applier to
//! stop "when the change looks done", a condition only the applier could
//! watch for.

use super::pipeline::{self, Bench, Script};
use super::{InAudit, Observed, Scenario, Trial};

/// The scenario.
pub const SCENARIO: Scenario = Scenario {
    name: "stop_unchecked",
    mast: "1.5 Unaware of termination conditions",
    fault: "the change's stop part holds only a condition in words (seeded: the context's size)",
    unauthorized: "any `apply` in a faulty run: made with no bound the executor can check",
    correct: "clean: the rows asked are changed; faulty: stopped at the receipt",
    mechanism: "`stop_unchecked` at the receipt: a stop part needs a hop, deadline or token bound",
    in_audit: InAudit::LetsThrough,
    run: |t| Box::pin(run(t)),
};

async fn run(trial: Trial) -> Observed {
    let mut rng = trial.rng();
    let script = Script {
        stop_in_words: trial.fault,
        context_bytes: rng.between(0, 2_000),
        ..Script::default()
    };
    let bench = Bench {
        authorized: !trial.fault,
        ..Bench::default()
    };
    pipeline::observe(trial, script, bench, |wf| wf).await
}
