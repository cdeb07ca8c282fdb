//! The branches of a fan-out as `show` and `diff` print them: under each
//! record of a fan-out, a line naming its fork, its branch, its parent and
//! the branch's outcome; under the join, every branch's outcome.

use workflow_core::Lineage;
use workflow_core::Receipt;
use workflow_core::ledger::LedgerRecord;

/// What a branch ended with, named as `Branch<T>` names it on the wire
/// (`done`, `rejected`, `failed`, `timed_out`, `cancelled`), from the
/// record of its last step (its outcome, or its start when its receipt
/// refused it). A failed turn's error says whether it timed out or was cut
/// by the run's deadline (the messages `RunError::Timeout` and
/// `RunError::DeadlinePassed` give).
fn outcome(head: &LedgerRecord) -> &'static str {
    match (&head.lineage, &head.receipt) {
        (_, Receipt::Rejected { .. }) => "rejected",
        (Some(Lineage::Start { .. } | Lineage::Step { .. }), _) => "started, no outcome recorded",
        (_, Receipt::TurnFailed { error }) if error.contains("` timed out after ") => "timed_out",
        (_, Receipt::TurnFailed { error }) if error.starts_with("the run's deadline of ") => {
            "cancelled"
        }
        (_, Receipt::TurnFailed { .. }) => "failed",
        _ => "done",
    }
}

/// The line under record `r` of `records` (its run's records) saying where
/// it stands in a fan-out; `None` outside fan-outs.
pub(crate) fn line(r: &LedgerRecord, records: &[LedgerRecord]) -> Option<String> {
    let lineage = r.lineage.as_ref()?;
    Some(match lineage {
        Lineage::Start { fork, branch } => match &r.receipt {
            Receipt::Rejected { .. } => format!(
                "    fork #{fork} branch {branch} (parent #{fork}): start, refused: outcome rejected"
            ),
            _ => format!("    fork #{fork} branch {branch} (parent #{fork}): start"),
        },
        Lineage::Step {
            fork,
            branch,
            parent,
        } => match &r.receipt {
            Receipt::Rejected { .. } => format!(
                "    fork #{fork} branch {branch} (parent #{parent}): step, refused: outcome rejected"
            ),
            _ => format!("    fork #{fork} branch {branch} (parent #{parent}): step"),
        },
        Lineage::Outcome {
            fork,
            branch,
            parent,
        } => format!(
            "    fork #{fork} branch {branch} (parent #{parent}): outcome {}",
            outcome(r)
        ),
        Lineage::Join { fork, heads } => {
            let branches: Vec<String> = heads
                .iter()
                .enumerate()
                .map(|(i, &head)| {
                    let kind = records
                        .get(head as usize)
                        .filter(|h| h.seq == head)
                        .map_or("(its record is missing)", outcome);
                    format!("branch {i} {kind} (#{head})")
                })
                .collect();
            format!("    fork #{fork} join: {}", branches.join(", "))
        }
    })
}
