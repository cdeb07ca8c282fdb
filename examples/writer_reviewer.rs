//! A writer/reviewer loop whose bound is enforced; the last run streamed
//! as an event log while it goes on.
//!
//! Run: `cargo run --example writer_reviewer`

use examples::writer_reviewer::{ScriptedReviewer, review, topic};
use workflow_core::{Event, Outcome};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    println!(
        "loop bound reviewer -> writer: 3; computed MAX_HOPS = {}",
        review::MAX_HOPS
    );

    println!("\n== a reviewer that accepts the second draft ==");
    let wf = review::Workflow::new(
        (),
        ScriptedReviewer {
            accepts_draft: Some(2),
        },
    );
    match wf.run(topic("seams in agent systems")).await {
        Ok(done) => {
            print!("{}", done.transcript);
            println!(
                "done after {} drafts: {}",
                done.output.drafts, done.output.text
            );
        }
        Err(aborted) => {
            println!("unexpected: {aborted}");
            std::process::exit(1);
        }
    }

    println!("\n== a reviewer that is never satisfied ==");
    let wf = review::Workflow::new(
        (),
        ScriptedReviewer {
            accepts_draft: None,
        },
    );
    match wf.run(topic("seams in agent systems")).await {
        Ok(_) => {
            println!("unexpected: the run completed");
            std::process::exit(1);
        }
        Err(aborted) => {
            let records = match aborted.transcript.records() {
                Ok(records) => records,
                Err(e) => {
                    println!("unexpected: {e}");
                    std::process::exit(1);
                }
            };
            for r in records {
                println!("#{} {} -> {} {:?}", r.seq, r.from, r.to, r.receipt);
            }
            println!("stopped by the bound: {}", aborted.error);
        }
    }

    println!("\n== the first run again, streamed: an event log while it runs ==");
    let wf = review::Workflow::new(
        (),
        ScriptedReviewer {
            accepts_draft: Some(2),
        },
    );
    let (mut events, run) = wf.run_streaming(topic("seams in agent systems"));
    // The log reads the events as the run sends them; `join!` drives both.
    let log = async {
        while let Some(event) = events.next().await {
            match event {
                Event::TurnStarted { hop, agent } => println!("[hop {hop}] {agent} starts"),
                Event::ToolCall { agent, call, .. } => println!("  {agent} calls {}", call.tool),
                Event::Transfer(r) => {
                    println!("  #{} {} -> {} ({})", r.seq, r.from, r.to, r.payload_type)
                }
                Event::Receipt { seq, receipt } => println!("  #{seq} {receipt:?}"),
                Event::Suspended { agent, reason } => println!("suspended at {agent}: {reason}"),
                Event::Ended { status, .. } => println!("ended: {status}"),
                other => println!("  {other:?}"),
            }
        }
    };
    let ((), outcome) = tokio::join!(log, run);
    if !matches!(outcome, Outcome::Completed(_)) {
        println!("unexpected: {outcome:?}");
        std::process::exit(1);
    }
}
