//! The support desk (`examples/src/ticket_triage.rs`), the shape issue 16
//! asked for: short contracts, a pinned customer, an empty-is-valid status
//! page, a bounded return from tech to the classifier, a streamed log.

use examples::ticket_triage::{Desk, Incident, request, root, triage};
use serde_json::Value;
use workflow_core::Transcript;
use workflow_core::prelude::*;
use workflow_core::tool::ToolOutcome;

fn desk(incidents: &[(&str, &str)]) -> Desk {
    Desk {
        incidents: incidents
            .iter()
            .map(|(service, summary)| Incident {
                service: (*service).into(),
                summary: (*summary).into(),
            })
            .collect(),
        ..Desk::default()
    }
}

/// The `(from, to)` of each transfer of a run.
fn route(t: &Transcript) -> Vec<(String, String)> {
    t.records()
        .expect("the records read back")
        .into_iter()
        .map(|r| (r.from.to_string(), r.to.to_string()))
        .collect()
}

fn hops(path: &[(&str, &str)]) -> Vec<(String, String)> {
    path.iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect()
}

#[tokio::test]
async fn a_charge_goes_to_billing_and_is_refunded_once() {
    let wf = triage::Workflow::new(root("acme"), desk(&[]));
    let done = wf
        .run(request("acme", "I was charged twice", 1_999))
        .await
        .expect("completes");
    assert_eq!(done.output.action, "refunded 1999 cents (re_1)");
    assert_eq!(wf.deps().refunds(), ["acme: 1999"]);
    assert_eq!(
        route(&done.transcript),
        hops(&[
            ("START", "intake"),
            ("intake", "classifier"),
            ("classifier", "billing"),
            ("billing", "END"),
        ])
    );
    // The short contract is on the record, with the runtime's defaults.
    let ticket: Value = serde_json::from_str(&done.transcript.payload(1).unwrap()).unwrap();
    assert_eq!(ticket["contract"]["scope"]["authority"], "Route");
    assert_eq!(
        ticket["contract"]["scope"]["expires"]["at_hop"],
        u64::from(triage::MAX_HOPS)
    );
    assert_eq!(
        ticket["contract"]["stop"][0]["hop"],
        u64::from(triage::MAX_HOPS)
    );
}

#[tokio::test]
async fn no_incident_is_an_answer_that_sends_a_charge_back_to_the_classifier_once() {
    let wf = triage::Workflow::new(root("acme"), desk(&[("login", "logins fail")]));
    let done = wf
        .run(request("acme", "checkout broke and took my money", 1_999))
        .await
        .expect("completes");
    assert_eq!(
        route(&done.transcript),
        hops(&[
            ("START", "intake"),
            ("intake", "classifier"),
            ("classifier", "tech"),
            ("tech", "classifier"),
            ("classifier", "billing"),
            ("billing", "END"),
        ])
    );
    // The status page's empty list was a result, recorded as `[]`.
    let calls: Vec<_> = done
        .transcript
        .turns()
        .flat_map(|(_, turn)| turn.tool_calls.clone())
        .collect();
    let status = calls
        .iter()
        .find(|c| c.tool == "status_page")
        .expect("called");
    assert!(
        matches!(&status.outcome, ToolOutcome::Ok { result, .. } if result == "[]"),
        "{:?}",
        status.outcome
    );
    // Tech's evidence cites that call, and the classifier passed it on to
    // billing with its citation: both receipts checked it.
    let ToolOutcome::Ok { digest, .. } = &status.outcome else {
        unreachable!("matched above")
    };
    for seq in [3, 4] {
        let payload: serde_json::Value =
            serde_json::from_str(&done.transcript.payload(seq).unwrap()).unwrap();
        let cited = &payload["contract"]["evidence"][0]["cites"][0];
        assert_eq!(cited["tool"], "status_page", "record #{seq}: {payload}");
        assert_eq!(cited["digest"], digest.as_str(), "record #{seq}");
    }
    assert_eq!(wf.deps().refunds(), ["acme: 1999"]);
}

#[tokio::test]
async fn a_known_incident_is_the_answer() {
    let wf = triage::Workflow::new(root("acme"), desk(&[("checkout", "payments are slow")]));
    let done = wf
        .run(request("acme", "checkout hangs", 0))
        .await
        .expect("completes");
    assert_eq!(done.output.action, "known incident: payments are slow");
    assert!(wf.deps().refunds().is_empty());
}

#[tokio::test]
async fn another_customers_ticket_is_rejected_by_the_pin_before_any_refund() {
    let wf = triage::Workflow::new(root("acme"), desk(&[]));
    let aborted = wf
        .run(request("globex", "I was charged twice", 1_999))
        .await
        .expect_err("not the run's tenant");
    match &aborted.error {
        RunError::Rejected { from, to, reason } => {
            assert_eq!((*from, *to), ("intake", "classifier"));
            assert!(
                matches!(reason, RejectReason::InvariantBroken { invariant, .. } if invariant == "pin(Ticket.customer = tenant)"),
                "{reason:?}"
            );
        }
        other => panic!("expected the pin's rejection, got {other}"),
    }
    assert!(wf.deps().refunds().is_empty());
}

#[tokio::test]
async fn the_streamed_log_holds_every_transfer_of_the_record_in_order() {
    let wf = triage::Workflow::new(root("acme"), desk(&[]));
    let (mut events, run) = wf.run_streaming(request("acme", "I was charged twice", 1_999));
    let read = async {
        let mut seen = Vec::new();
        while let Some(event) = events.next().await {
            seen.push(event);
        }
        seen
    };
    let (seen, outcome) = tokio::join!(read, run);
    let Outcome::Completed(done) = outcome else {
        panic!("expected a completed run, got {outcome:?}");
    };
    let streamed: Vec<_> = seen
        .iter()
        .filter_map(|e| match e {
            Event::Transfer(r) => Some((r.from.to_string(), r.to.to_string())),
            _ => None,
        })
        .collect();
    assert_eq!(streamed, route(&done.transcript));
    assert!(matches!(seen.last(), Some(Event::Ended { .. })), "{seen:?}");
    assert!(
        seen.iter()
            .any(|e| matches!(e, Event::ToolCall { call, .. } if call.tool == "refund"))
    );
}
