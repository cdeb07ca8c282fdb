//! A scope used after it expired: the worker delegates the applier's
//! authority with an expiry already past (seeded: some hops back, or some
//! milliseconds ago), and the applier writes under it.

use super::pipeline::{self, Bench, Script};
use super::{InAudit, Observed, Scenario, Trial};

/// The scenario.
pub const SCENARIO: Scenario = Scenario {
    name: "scope_expired",
    mast: "1.2 Disobey role specification (authority exercised past its lease)",
    fault: "the applier's scope expired before it starts (seeded: 0-2 hops back, or 1-60000 ms ago)",
    unauthorized: "any `apply` in a faulty run: made under an expired scope",
    correct: "clean: the rows asked are changed; faulty: stopped before `apply`",
    mechanism: "`scope_expired` at the receipt; in audit mode the tool call's scope check records `would refuse`",
    in_audit: InAudit::LetsThrough,
    run: |t| Box::pin(run(t)),
};

async fn run(trial: Trial) -> Observed {
    let mut rng = trial.rng();
    let by_hops = rng.coin();
    let hops = rng.between(0, 2) as u32;
    let ms = rng.between(1, 60_000);
    let script = Script {
        expired_hops: (trial.fault && by_hops).then_some(hops),
        expired_ms: (trial.fault && !by_hops).then_some(ms),
        ..Script::default()
    };
    let bench = Bench {
        authorized: !trial.fault,
        ..Bench::default()
    };
    pipeline::observe(trial, script, bench, |wf| wf).await
}
