//! The support desk, streamed: each event of a run printed as it happens.
//!
//! Run with `cargo run --example ticket_triage`. Three tickets: a charge
//! (refunded by billing), an outage (a known incident), and a charge sent
//! to tech first (no incident: back to the classifier once, then billing).

use examples::ticket_triage::{Desk, Incident, request, root, triage};
use workflow_core::prelude::*;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let desk = Desk {
        incidents: vec![Incident {
            service: "login".into(),
            summary: "logins fail in the EU".into(),
        }],
        ..Desk::default()
    };
    let wf = triage::Workflow::new(root("acme"), desk);
    let tickets = [
        request("acme", "I was charged twice", 1_999),
        request("acme", "the login page hangs", 0),
        request("acme", "checkout broke and took my money", 1_999),
    ];
    for ticket in tickets {
        println!("--- {}", ticket.text);
        let (mut events, run) = wf.run_streaming(ticket);
        let log = async {
            while let Some(event) = events.next().await {
                match event {
                    Event::TurnStarted { hop, agent } => println!("[hop {hop}] {agent}"),
                    Event::ToolCall { agent, call, .. } => {
                        println!("  {agent} called {}({})", call.tool, call.arguments)
                    }
                    Event::Transfer(r) => println!("  #{} {} -> {}", r.seq, r.from, r.to),
                    Event::Receipt { seq, receipt } => println!("  #{seq} {receipt:?}"),
                    Event::Ended { status, .. } => println!("  ended: {status}"),
                    other => println!("  {other:?}"),
                }
            }
        };
        let ((), outcome) = tokio::join!(log, run);
        match outcome {
            Outcome::Completed(done) => println!("=> {}", done.output.action),
            other => {
                println!("unexpected: {other:?}");
                std::process::exit(1);
            }
        }
    }
    println!("refunds made: {:?}", wf.deps().refunds());
}
