//! What more than one test module uses: the flow and the SDK pipelines the
//! OpenTelemetry tests share (kept beside `otel_memory.rs` and
//! `otel_export.rs`, which include them too), a thread-local subscriber
//! that sees all of its thread's spans, and the assertions on rejections.

/// The flow the telemetry tests run (planner -> doer, which calls `double`).
#[path = "../traced/mod.rs"]
pub mod traced;

/// The OpenTelemetry SDK with in-memory exporters, installed once per binary.
#[allow(dead_code)] // `otel_memory.rs` uses more of it than this binary does.
#[path = "../in_memory/mod.rs"]
pub mod in_memory;

mod subscriber;

pub use subscriber::with_subscriber;

use workflow_core::{Aborted, Escalation, Receipt, RejectReason, RunError, Transcript};

/// Asserts that a run stopped on the rejection of the transfer `from ->
/// to` for `reason`: the error says so, and that transfer is the last
/// record, with the rejected receipt (recorded, and nothing after it).
#[track_caller]
pub fn assert_rejected(aborted: &Aborted, from: &str, to: &str, reason: RejectReason) {
    assert_eq!(
        rejection(&aborted.error),
        (from, to, &reason),
        "the error: {}",
        aborted.error
    );
    assert_eq!(
        route(&aborted.transcript).last(),
        Some(&hop(from, to, rejected(reason))),
        "the last record"
    );
}

/// The transfer a run stopped on and why, `(from, to, reason)`; panics,
/// naming the error, when the run stopped any other way.
#[track_caller]
pub fn rejection(error: &RunError) -> (&'static str, &'static str, &RejectReason) {
    match error {
        RunError::Rejected { from, to, reason } => (from, to, reason),
        other => panic!("expected a rejection, got {other}"),
    }
}

/// The reason a suspended run waits for (a receipt check that escalated).
#[track_caller]
pub fn escalated(error: &RunError) -> &RejectReason {
    match error {
        RunError::Suspended {
            reason: Escalation::Rejected { reason },
            ..
        } => reason,
        other => panic!("expected a suspension on a rejection, got {other}"),
    }
}

/// The decided receipt of every transfer, in order.
pub fn receipts(t: &Transcript) -> Vec<Receipt> {
    (0..t.len()).filter_map(|i| t.receipt(i)).collect()
}

/// `(from, to, receipt)` of every record.
pub fn route(t: &Transcript) -> Vec<(String, String, Receipt)> {
    t.records()
        .expect("the records read back")
        .into_iter()
        .map(|r| (r.from.to_string(), r.to.to_string(), r.receipt))
        .collect()
}

/// One entry of a [`route`].
pub fn hop(from: &str, to: &str, receipt: Receipt) -> (String, String, Receipt) {
    (from.to_owned(), to.to_owned(), receipt)
}

/// The receipt of a transfer rejected for `reason`.
pub fn rejected(reason: RejectReason) -> Receipt {
    Receipt::Rejected { reason }
}
