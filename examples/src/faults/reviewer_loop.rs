//! A reviewer loop without progress: the reviewer is never satisfied
//! (seeded: it would accept only draft 5-9, or none), and without a bound
//! the writer and reviewer would hand the draft back and forth for ever.

use crate::writer_reviewer::{Article, ScriptedReviewer, review, topic};

use super::{Effects, InAudit, Observed, Scenario, Trial};

/// The scenario.
pub const SCENARIO: Scenario = Scenario {
    name: "reviewer_loop",
    mast: "1.3 Step repetition",
    fault: "the reviewer accepts only draft 5-9, or none (clean: draft 1-4)",
    unauthorized: "none (no writes); the harm would be a loop that never ends",
    correct: "clean: the accepted draft; faulty: stopped at the edge's bound (3 returns)",
    mechanism: "the per-edge loop bound `writer(max = 3)`, declared and checked at the receipt",
    in_audit: InAudit::StillStops("a loop bound bounds the run, in both modes"),
    run: |t| Box::pin(run(t)),
};

async fn run(trial: Trial) -> Observed {
    let mut rng = trial.rng();
    let accepts_draft = if trial.fault {
        rng.coin().then(|| rng.between(5, 9) as u32)
    } else {
        Some(rng.between(1, 4) as u32)
    };
    let wf = review::Workflow::new((), ScriptedReviewer { accepts_draft }).with_mode(trial.mode);
    let result = wf.run(topic("seams in agent systems")).await;
    Observed::of(&result, &Effects::default(), |a: &Article| {
        Some(a.drafts) == accepts_draft
    })
}
