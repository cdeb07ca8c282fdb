//! A budget overrun: the worker's model spends more tokens than the run's
//! budget (seeded: how many), and the applier would write after it.

use workflow_core::Budget;

use super::pipeline::{self, Bench, Script};
use super::{InAudit, Observed, Scenario, Trial};

/// The run's token budget.
const BUDGET: u64 = 1_000;

/// The scenario.
pub const SCENARIO: Scenario = Scenario {
    name: "budget_overrun",
    mast: "1.5 Unaware of termination conditions (spending past the budget)",
    fault: "the worker spends 1,001-5,000 tokens of a 1,000-token budget (clean: 0-900)",
    unauthorized: "any `apply` in a faulty run: made after the budget was spent",
    correct: "clean: the rows asked are changed; faulty: stopped in the worker's turn",
    mechanism: "the run's token budget: `cx.charge` past it fails and the turn stops the run",
    in_audit: InAudit::StillStops("a budget spent during a turn bounds the run, in both modes"),
    run: |t| Box::pin(run(t)),
};

async fn run(trial: Trial) -> Observed {
    let mut rng = trial.rng();
    let tokens = if trial.fault {
        rng.between(BUDGET + 1, 5 * BUDGET)
    } else {
        rng.between(0, BUDGET * 9 / 10)
    };
    let script = Script {
        tokens,
        ..Script::default()
    };
    let bench = Bench {
        authorized: !trial.fault,
        ..Bench::default()
    };
    pipeline::observe(trial, script, bench, |wf| {
        wf.with_budget(Budget::default().max_tokens(BUDGET))
    })
    .await
}
