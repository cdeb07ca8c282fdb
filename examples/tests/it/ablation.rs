//! The reduced ablation CI runs (issue 14): every scenario of the
//! fault-injection suite, three seeded runs per variant and mode. It fails
//! when enforce mode lets an unauthorized side effect through, lets a wrong
//! result reach `END`, or rejects a clean run; and when audit mode does not
//! let an auditable fault through, or lets one through unrecorded.

use examples::faults::ablation::{Counts, ablate, trial};
use examples::faults::{Ending, InAudit, SLOTS, scenarios};
use workflow_core::Mode;

/// Runs per scenario, variant and mode.
const RUNS: u32 = 3;

#[tokio::test]
async fn enforce_mode_stops_every_fault_and_audit_mode_records_what_it_lets_through() {
    let table = ablate(RUNS, 14).await;
    assert!(table.rows.len() >= 15, "{} scenarios", table.rows.len());
    for row in &table.rows {
        let name = row.scenario.name;
        let e = row.enforce;
        assert_eq!(e.runs, RUNS);
        assert_eq!(
            e.unauthorized, 0,
            "{name}: enforce let a side effect through"
        );
        assert_eq!(
            e.wrong_at_end, 0,
            "{name}: enforce let a wrong result reach END"
        );
        assert_eq!(
            e.stopped + e.escalated + e.correct_at_end,
            RUNS,
            "{name}: {e:?}"
        );
        for (mode, clean) in [("enforce", row.clean_enforce), ("audit", row.clean_audit)] {
            assert_eq!(
                clean.not_correct(),
                0,
                "{name}: a clean run did not end correct in {mode} mode: {clean:?}"
            );
            assert_eq!(
                clean.recorded, 0,
                "{name}: a verdict on a clean run ({mode})"
            );
            assert_eq!(clean.unauthorized, 0, "{name}: {clean:?}");
        }
        let a = row.audit;
        match row.scenario.in_audit {
            InAudit::LetsThrough => {
                // Every faulty run gets through, does what enforcement
                // stops, and says so in its record.
                assert_eq!(
                    a.recorded, RUNS,
                    "{name}: audit let a fault through unrecorded: {a:?}"
                );
                assert_eq!(a.wrong_at_end, RUNS, "{name}: {a:?}");
                assert_eq!(a.stopped + a.escalated, 0, "{name}: {a:?}");
            }
            InAudit::StillStops(_) => {
                // Not auditable: stopped as in enforce mode.
                assert_eq!(a, e, "{name}: audit differs from enforce");
                assert_eq!(a.recorded, 0, "{name}: {a:?}");
            }
        }
    }
    // Audit mode does let unauthorized side effects through somewhere: the
    // suite can tell the two modes apart.
    let [enforce, audit, ..] = table.totals();
    assert_eq!(enforce.unauthorized, 0);
    assert!(audit.unauthorized > 0, "{audit:?}");
}

#[tokio::test]
async fn the_same_seed_gives_the_same_table() {
    let (a, b) = (ablate(1, 7).await, ablate(1, 7).await);
    let counts = |t: &examples::faults::ablation::Table| -> Vec<[Counts; 4]> {
        t.rows
            .iter()
            .map(|r| [r.enforce, r.audit, r.clean_enforce, r.clean_audit])
            .collect()
    };
    assert_eq!(counts(&a), counts(&b));
    let text = a.to_string();
    for s in scenarios() {
        assert!(text.contains(&format!("| {} |", s.name)), "{text}");
    }
    for slot in SLOTS {
        assert!(
            text.contains(&format!("- {} (not run)", slot.name)),
            "{text}"
        );
    }
}

#[tokio::test]
async fn a_faulty_run_in_enforce_mode_says_which_check_stopped_it() {
    let by_name = |n: &str| {
        scenarios()
            .into_iter()
            .find(|s| s.name == n)
            .expect("scenario")
    };
    let forbidden = trial(&by_name("forbidden_field"), 3, Mode::Enforce, true).await;
    assert!(
        matches!(&forbidden.ending, Ending::Stopped(why) if why.contains("forbidden field")),
        "{forbidden:?}"
    );
    let drifted = trial(&by_name("drifted_tag"), 3, Mode::Enforce, true).await;
    assert!(
        matches!(&drifted.ending, Ending::Escalated(_)),
        "{drifted:?}"
    );
    let unchecked = trial(&by_name("stop_unchecked"), 3, Mode::Audit, true).await;
    assert_eq!(unchecked.verdicts, 1, "{unchecked:?}");
}

#[tokio::test]
async fn a_post_resent_as_the_same_bytes_is_rejected_as_such_and_one_built_anew_is_not() {
    use examples::faults::resent_unchanged::{Brief, posting};
    for (fixed_envelope, resent) in [(true, 2), (false, 2)] {
        let wf = posting::Workflow::new((), Default::default());
        let brief = Brief {
            first_len: 400,
            shortens: false,
            fixed_envelope,
        };
        let aborted = wf.run(brief).await.expect_err("never within the limit");
        let reasons: Vec<_> = (0..aborted.transcript.len())
            .filter_map(|i| match aborted.transcript.receipt(i) {
                Some(workflow_core::Receipt::Rejected { reason }) => Some(reason),
                _ => None,
            })
            .collect();
        let unchanged = reasons
            .iter()
            .filter(|r| matches!(r, workflow_core::RejectReason::ResentUnchanged))
            .count();
        // Returned twice (the bound), then stopped: three rejections. The
        // same bytes are rejected as resent unchanged, and so is the same
        // post under a contract built anew: `cx.contract` leases as long as
        // the sender's own scope, so its bytes do not change from one hop
        // to the next (they did while it leased until the next hop).
        assert_eq!((reasons.len(), unchanged), (3, resent), "{reasons:?}");
        assert!(wf.deps().all().is_empty(), "nothing published");
    }
}
