//! A dissenting verdict dropped where parallel branches join: three
//! reviewers look at a change at once, one of them blocks it, and the judge
//! merges by majority, handing on one "approve" that hides the block.
//! The workflow is the parallel review example's
//! (`examples/src/parallel_review.rs`).

use crate::parallel_review::{Change, Decision, Desk, Rules, review};

use super::{InAudit, Observed, Scenario, Trial};

/// The scenario.
pub const SCENARIO: Scenario = Scenario {
    name: "verdict_dropped_at_join",
    mast: "2.4 Information withholding / 3.3 Incorrect verification (a dissent merged away)",
    fault: "the judge merges the three reviews by majority and drops the one that blocks (seeded: which reviewer blocks)",
    unauthorized: "any `merge`: every variant's change is blocked by one reviewer",
    correct: "clean: not merged, the disagreement handed on (an open question, or evidence citing every review; seeded); faulty: stopped",
    mechanism: "`verdict_dropped`: a join whose branches' `#[verdict]`s differ must carry the disagreement forward",
    in_audit: InAudit::LetsThrough,
    run: |t| Box::pin(run(t)),
};

/// One diff per reviewer, each blocked by that reviewer only.
const DIFFS: &[&str] = &[
    "+ unsafe { buf.set_len(n) }",
    "+ for h in headers { out.push(h.clone()) }",
    "+ // TODO: handle folded headers",
];

async fn run(trial: Trial) -> Observed {
    let mut rng = trial.rng();
    let diff = rng.pick(DIFFS).copied().unwrap_or(DIFFS[0]);
    let rules = if trial.fault {
        Rules::Majority
    } else if rng.coin() {
        Rules::AskMaintainer
    } else {
        Rules::Weigh
    };
    let wf = review::Workflow::new((), Desk::new(rules, false)).with_mode(trial.mode);
    let change = Change {
        title: "parse headers".into(),
        diff: diff.into(),
    };
    let result = wf.run(change).await;
    Observed::of(&result, &wf.deps().effects, |d: &Decision| {
        !d.merged && !trial.fault
    })
}
