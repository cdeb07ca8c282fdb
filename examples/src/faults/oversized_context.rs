//! An oversized context handed on: the worker pastes everything it read
//! into the change (seeded: 5-40 KB against a 4 KB handoff limit).

use super::pipeline::{self, Bench, Script};
use super::{InAudit, Observed, Scenario, Trial};

/// The scenario.
pub const SCENARIO: Scenario = Scenario {
    name: "oversized_context",
    mast: "1.4 Loss of conversation history (a context truncated downstream)",
    fault: "the worker hands on 5,000-40,000 bytes of context (clean: 0-2,000) under `max_bytes = 4096`",
    unauthorized: "any `apply` in a faulty run: planned from a context a model would truncate",
    correct: "clean: the rows asked are changed; faulty: stopped, never truncated",
    mechanism: "`#[handoff(max_bytes = ..)]`: `too_large` at the receipt (never truncated)",
    in_audit: InAudit::LetsThrough,
    run: |t| Box::pin(run(t)),
};

async fn run(trial: Trial) -> Observed {
    let mut rng = trial.rng();
    let context_bytes = if trial.fault {
        rng.between(5_000, 40_000)
    } else {
        rng.between(0, 2_000)
    };
    let script = Script {
        context_bytes,
        ..Script::default()
    };
    let bench = Bench {
        authorized: !trial.fault,
        ..Bench::default()
    };
    pipeline::observe(trial, script, bench, |wf| wf).await
}
