//! The parallel review (`examples/src/parallel_review.rs`): three reviewers
//! at once, two of which disagree, and a judge held to carrying the
//! disagreement forward (issue 13, item 3).

use examples::parallel_review::{Call, Change, Decision, Desk, Review, Rules, review};
use workflow_core::prelude::*;
use workflow_core::{BranchVerdict, Mode, Transcript};

/// The change of the example: security blocks it, the others approve.
fn unsafe_change() -> Change {
    Change {
        title: "parse headers faster".into(),
        diff: "+ unsafe { buf.set_len(n) }".into(),
    }
}

const QUESTION: &str = r#"the branches disagree: security says "block", performance says "approve", style says "approve""#;

/// Each branch's view as the record holds it: `(source, seq, review)`.
fn views(t: &Transcript) -> Vec<(String, u32, Review)> {
    t.records()
        .expect("the records read back")
        .into_iter()
        .filter(|r| matches!(r.lineage, Some(Lineage::Outcome { .. })))
        .map(|r| {
            let review = serde_json::from_str(&r.payload).expect("a review");
            (r.from.to_string(), r.seq, review)
        })
        .collect()
}

fn review(reviewer: &str, verdict: Call, finding: &str) -> Review {
    Review {
        reviewer: reviewer.into(),
        verdict,
        finding: finding.into(),
    }
}

fn the_three_views() -> Vec<(String, u32, Review)> {
    let unsafe_block = "an `unsafe` block without a safety comment";
    vec![
        (
            "security".into(),
            4,
            review("security", Call::Block, unsafe_block),
        ),
        (
            "performance".into(),
            5,
            review("performance", Call::Approve, "nothing to object to"),
        ),
        (
            "style".into(),
            6,
            review("style", Call::Approve, "nothing to object to"),
        ),
    ]
}

/// The judge's handoff to the maintainer, as recorded.
fn merge_ask(t: &Transcript) -> serde_json::Value {
    let records = t.records().expect("the records read back");
    let ask = records
        .iter()
        .find(|r| r.from.to_string() == "judge")
        .expect("the judge handed on");
    serde_json::from_str(&ask.payload).expect("json")
}

#[tokio::test]
async fn the_judge_hands_the_disagreement_to_the_maintainer() {
    let wf = review::Workflow::new((), Desk::new(Rules::AskMaintainer, false));
    let done = wf.run(unsafe_change()).await.expect("completes");
    assert_eq!(
        done.output,
        Decision {
            merged: false,
            why: format!("held for a person: {QUESTION}"),
        }
    );
    // Every view stays in the record, with its source.
    assert_eq!(views(&done.transcript), the_three_views());
    // The judge's handoff names every reviewer and its verdict.
    let ask = merge_ask(&done.transcript);
    assert_eq!(ask["contract"]["open"][0]["question"], QUESTION);
    assert_eq!(ask["call"], "block");
    assert!(wf.deps().effects.all().is_empty(), "nothing merged");
}

#[tokio::test]
async fn a_judge_that_drops_the_dissent_is_rejected_at_the_next_receipt() {
    let wf = review::Workflow::new((), Desk::new(Rules::Majority, false));
    let aborted = wf.run(unsafe_change()).await.expect_err("stopped");
    let RunError::Rejected { from, to, reason } = &aborted.error else {
        panic!("not a rejection: {}", aborted.error);
    };
    assert_eq!((*from, *to), ("judge", "maintainer"));
    let verdicts: Vec<(String, String, Option<u32>)> = match reason {
        RejectReason::VerdictDropped { fork, verdicts } => {
            assert_eq!(*fork, 0, "the fan-out of the lead's turn on record #0");
            verdicts
                .iter()
                .map(|v: &BranchVerdict| {
                    let seq = match &v.record {
                        Some(Citation::Record { seq, .. }) => Some(*seq),
                        _ => None,
                    };
                    (v.branch.to_string(), v.verdict.clone(), seq)
                })
                .collect()
        }
        other => panic!("not a dropped verdict: {other}"),
    };
    assert_eq!(
        verdicts,
        [
            ("security".to_owned(), "block".to_owned(), Some(4)),
            ("performance".to_owned(), "approve".to_owned(), Some(5)),
            ("style".to_owned(), "approve".to_owned(), Some(6)),
        ]
    );
    assert!(
        reason
            .to_string()
            .contains("carry it forward as an open question"),
        "the message says the fix: {reason}"
    );
    // Nothing merged, and every view is still in the record.
    assert!(wf.deps().effects.all().is_empty());
    assert_eq!(views(&aborted.transcript), the_three_views());
}

#[tokio::test]
async fn evidence_citing_every_reviewer_resolves_the_disagreement() {
    let wf = review::Workflow::new((), Desk::new(Rules::Weigh, false));
    let done = wf.run(unsafe_change()).await.expect("completes");
    assert_eq!(
        done.output,
        Decision {
            merged: false,
            why: "blocked: a block outweighs any number of approvals".into(),
        }
    );
    let ask = merge_ask(&done.transcript);
    let cited: Vec<u64> = ask["contract"]["evidence"][0]["cites"]
        .as_array()
        .expect("citations")
        .iter()
        .map(|c| c["seq"].as_u64().expect("a record citation"))
        .collect();
    assert_eq!(cited, [4, 5, 6]);
    assert_eq!(ask["contract"]["evidence"][0]["resolves"], QUESTION);
}

#[tokio::test]
async fn agreeing_reviewers_need_nothing_carried() {
    let wf = review::Workflow::new((), Desk::new(Rules::Majority, true));
    let change = Change {
        title: "rename a variable".into(),
        diff: "- let x = 1;\n+ let count = 1;".into(),
    };
    let done = wf.run(change).await.expect("completes");
    assert_eq!(
        done.output,
        Decision {
            merged: true,
            why: "merged the change".into(),
        }
    );
    assert_eq!(wf.deps().effects.all().len(), 1);
}

#[tokio::test]
async fn in_audit_mode_the_dropped_dissent_is_let_through_and_recorded() {
    let wf = review::Workflow::new((), Desk::new(Rules::Majority, false)).with_mode(Mode::Audit);
    let done = wf
        .run(unsafe_change())
        .await
        .expect("audit lets it through");
    assert!(done.output.merged, "the majority merged it");
    assert_eq!(wf.deps().effects.unauthorized(), 1);
    let audit = done.transcript.summary().audit;
    assert_eq!(audit.len(), 1, "{audit:?}");
}

#[tokio::test]
async fn a_run_resumed_at_the_join_holds_the_judge_to_the_same_disagreement() {
    use std::sync::Arc;
    use workflow_core::ledger::{Ledger, MemoryLedger};
    let ledger = Arc::new(MemoryLedger::new());
    let wf =
        review::Workflow::new((), Desk::new(Rules::Majority, false)).with_ledger(ledger.clone());
    let aborted = wf.run(unsafe_change()).await.expect_err("stopped");
    let run_id = aborted.transcript.run_id();
    let whole = ledger.records(run_id).unwrap();
    // Cut right after the join's record (#7): the judge's turn runs again
    // after the restart, on the joined views read back from the record.
    let join = whole
        .iter()
        .position(|r| matches!(r.lineage, Some(Lineage::Join { .. })))
        .expect("a join record");
    let crashed = Arc::new(MemoryLedger::new());
    for r in &whole[..=join] {
        crashed.append(r).unwrap();
    }
    let wf =
        review::Workflow::new((), Desk::new(Rules::Majority, false)).with_ledger(crashed.clone());
    let resumed = wf.resume(run_id).await.expect_err("stopped again");
    let RunError::Rejected { reason, .. } = &resumed.error else {
        panic!("not a rejection: {}", resumed.error);
    };
    assert!(
        matches!(reason, RejectReason::VerdictDropped { verdicts, .. } if verdicts.len() == 3),
        "the resumed judge's handoff is held to the disagreement: {reason}"
    );
    // The resumed run's records are the uncut run's, record for record.
    let again = crashed.records(run_id).unwrap();
    let view = |r: &workflow_core::ledger::LedgerRecord| {
        (
            r.seq,
            r.from.to_string(),
            r.to.to_string(),
            r.receipt.clone(),
            r.payload.clone(),
        )
    };
    assert_eq!(
        again.iter().map(view).collect::<Vec<_>>(),
        whole.iter().map(view).collect::<Vec<_>>()
    );
    assert!(wf.deps().effects.all().is_empty());
}
