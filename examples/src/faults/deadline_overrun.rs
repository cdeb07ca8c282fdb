//! A deadline overrun: the lookup hangs (seeded: 250-300 ms) past the
//! run's 200 ms deadline, and the applier would write after it. (The clean
//! lookup takes 0-2 ms: the margin keeps a loaded machine's clean run
//! inside the deadline, in a debug build too.)

use std::time::Duration;

use super::pipeline::{self, Bench, Script};
use super::{InAudit, Observed, Scenario, Trial};

/// The run's deadline.
const DEADLINE_MS: u64 = 200;

/// The scenario.
pub const SCENARIO: Scenario = Scenario {
    name: "deadline_overrun",
    mast: "1.5 Unaware of termination conditions (working past the deadline)",
    fault: "the lookup takes 250-300 ms of a 200 ms run deadline (clean: 0-2 ms)",
    unauthorized: "any `apply` in a faulty run: made after the deadline",
    correct: "clean: the rows asked are changed; faulty: stopped in the worker's turn",
    mechanism: "the run deadline: the turn is given what is left of it and stopped at it",
    in_audit: InAudit::StillStops("a deadline passed during a turn bounds the run, in both modes"),
    run: |t| Box::pin(run(t)),
};

async fn run(trial: Trial) -> Observed {
    let mut rng = trial.rng();
    let lookup_ms = if trial.fault {
        rng.between(250, 300)
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
