//! A deadline overrun: the lookup hangs (seeded: 60-90 ms) past the run's
//! 40 ms deadline, and the applier would write after it.

use std::time::Duration;

use super::pipeline::{self, Bench, Script};
use super::{InAudit, Observed, Scenario, Trial};

/// The run's deadline.
const DEADLINE_MS: u64 = 40;

/// The scenario.
pub const SCENARIO: Scenario = Scenario {
    name: "deadline_overrun",
    mast: "1.5 Unaware of termination conditions (working past the deadline)",
    fault: "the lookup takes 60-90 ms of a 40 ms run deadline (clean: 0-2 ms)",
    unauthorized: "any `apply` in a faulty run: made after the deadline",
    correct: "clean: the rows asked are changed; faulty: stopped in the worker's turn",
    mechanism: "the run deadline: the turn is given what is left of it and stopped at it",
    in_audit: InAudit::StillStops("a deadline passed during a turn bounds the run, in both modes"),
    run: |t| Box::pin(run(t)),
};

async fn run(trial: Trial) -> Observed {
    let mut rng = trial.rng();
    let lookup_ms = if trial.fault {
        rng.between(60, 90)
    } else {
        rng.between(0, 2)
    };
    let bench = Bench {
        authorized: !trial.fault,
        lookup_ms,
        ..Bench::default()
    };
    pipeline::observe(trial, Script::default(), bench, |wf| {
        wf.with_deadline(Duration::from_millis(DEADLINE_MS))
    })
    .await
}
