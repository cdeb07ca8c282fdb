//! A run as a stream of typed events, read while the run goes on: checked
//! against the record for order and completeness.

use std::sync::atomic::{AtomicBool, Ordering};

use workflow_core::prelude::*;
use workflow_core::tool::ToolOutcome;

use crate::enforcement::{order, shop};

/// One line per event: what it is and which record it is about.
fn line(event: &Event) -> String {
    match event {
        Event::TurnStarted { hop, agent } => format!("turn {agent} at hop {hop}"),
        Event::ToolCall { agent, seq, call } => format!("tool {agent}:{} for #{seq}", call.tool),
        Event::ModelStep { agent, seq, .. } => format!("model {agent} for #{seq}"),
        Event::Transfer(r) => format!("transfer #{} {} -> {}", r.seq, r.from, r.to),
        Event::Receipt { seq, receipt } => format!("receipt #{seq} {receipt:?}"),
        Event::Suspended { agent, .. } => format!("suspended at {agent}"),
        Event::Ended { status, .. } => format!("ended {status}"),
        other => format!("{other:?}"),
    }
}

async fn streamed(picker: &str) -> (Vec<Event>, Outcome<crate::enforcement::Parcel>) {
    let (wf, _) = shop();
    let (mut events, run) = wf.run_streaming(order(picker));
    let read = async {
        let mut seen = Vec::new();
        while let Some(event) = events.next().await {
            seen.push(event);
        }
        seen
    };
    let (seen, outcome) = tokio::join!(read, run);
    (seen, outcome)
}

#[tokio::test]
async fn the_events_of_a_run_come_in_order_and_match_the_record() {
    let (events, outcome) = streamed("pick").await;
    let lines: Vec<String> = events.iter().map(line).collect();
    assert_eq!(
        lines,
        [
            "transfer #0 START -> clerk",
            "turn clerk at hop 0",
            "receipt #0 Accepted",
            "transfer #1 clerk -> picker",
            "turn picker at hop 1",
            "receipt #1 Accepted",
            "tool picker:pick for #2",
            "transfer #2 picker -> packer",
            "turn packer at hop 2",
            "receipt #2 Accepted",
            "tool packer:seal for #3",
            "transfer #3 packer -> END",
            "receipt #3 Accepted",
            "ended completed",
        ]
    );
    // Complete: every record, every receipt and every tool call, as recorded.
    let Outcome::Completed(done) = outcome else {
        panic!("not completed")
    };
    let records = done.transcript.records().unwrap();
    let transfers: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::Transfer(r) => Some((r.seq, r.payload.clone(), r.turn.clone())),
            _ => None,
        })
        .collect();
    let recorded: Vec<_> = records
        .iter()
        .map(|r| (r.seq, r.payload.clone(), r.turn.clone()))
        .collect();
    assert_eq!(transfers, recorded);
    let receipts: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::Receipt { receipt, .. } => Some(receipt.clone()),
            _ => None,
        })
        .collect();
    let decided: Vec<_> = records.iter().map(|r| r.receipt.clone()).collect();
    assert_eq!(receipts, decided);
    let calls: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCall { call, .. } => Some(call.clone()),
            _ => None,
        })
        .collect();
    let recorded_calls: Vec<_> = done
        .transcript
        .turns()
        .flat_map(|(_, t)| t.tool_calls.clone())
        .collect();
    assert_eq!(calls, recorded_calls);
    assert!(matches!(calls[0].outcome, ToolOutcome::Ok { .. }));
    assert_eq!(
        events.last(),
        Some(&Event::Ended {
            run_id: done.transcript.run_id(),
            status: "completed"
        })
    );
}

#[tokio::test]
async fn a_suspension_is_an_event_before_the_end() {
    let (events, outcome) = streamed("ask").await;
    let lines: Vec<String> = events.iter().map(line).collect();
    let tail = &lines[lines.len() - 3..];
    assert!(tail[0].starts_with("receipt #2 Escalated"), "{lines:?}");
    assert_eq!(tail[1..], ["suspended at picker", "ended suspended"]);
    assert!(matches!(outcome, Outcome::AwaitingDecision(_)));
}

#[tokio::test]
async fn a_stopped_run_ends_its_events_with_the_failed_turn() {
    let (events, outcome) = streamed("swallow").await;
    let lines: Vec<String> = events.iter().map(line).collect();
    assert_eq!(
        lines[lines.len() - 4..],
        [
            "tool picker:pick for #2",
            "transfer #2 clerk -> picker",
            "receipt #2 TurnFailed { error: \"agent `picker`: tool `pick` failed (empty result): an empty Vec; when no result is a valid answer of this tool, return `EmptyOk<..>` from it\" }",
            "ended stopped",
        ]
    );
    assert!(matches!(outcome, Outcome::Stopped(_)));
}

#[tokio::test(start_paused = true)]
async fn events_are_read_while_the_run_goes_on() {
    let (wf, _) = shop();
    let (mut events, run) = wf.run_streaming(order("sleep:50"));
    let finished = AtomicBool::new(false);
    let run = async {
        let outcome = run.await;
        finished.store(true, Ordering::SeqCst);
        outcome
    };
    let read = async {
        let mut live = false;
        while let Some(event) = events.next().await {
            if let Event::TurnStarted {
                agent: "picker", ..
            } = event
            {
                // The picker sleeps in its turn: the run is not over.
                live = !finished.load(Ordering::SeqCst);
            }
        }
        live
    };
    let (live, outcome) = tokio::join!(read, run);
    assert!(live, "the picker's start was read before the run ended");
    assert!(matches!(outcome, Outcome::Completed(_)));
}
