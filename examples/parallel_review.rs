//! Three reviewers of a change at once (security, performance, style), two
//! of which disagree, and a judge that hands the disagreement on.
//!
//! Run with `cargo run --example parallel_review`. The change adds an
//! `unsafe` block: security blocks it, performance and style approve. The
//! judge's house rule is to ask the maintainer, so its handoff carries an
//! open question naming every reviewer and its verdict; the maintainer
//! holds the change for a person. The record printed shows each review
//! with its source (the branch's outcome record, `reviewer -> judge`).
//! With `majority` as the argument, the judge merges by majority and drops
//! the dissent: the maintainer's receipt rejects it (`verdict_dropped`).

use examples::parallel_review::{Change, Desk, Rules, review};
use workflow_core::prelude::*;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let rules = match std::env::args().nth(1).as_deref() {
        None | Some("ask") => Rules::AskMaintainer,
        Some("weigh") => Rules::Weigh,
        Some("majority") => Rules::Majority,
        Some(other) => {
            eprintln!("unknown house rule `{other}`: ask, weigh or majority");
            std::process::exit(2);
        }
    };
    let wf = review::Workflow::new((), Desk::new(rules, false));
    let change = Change {
        title: "parse headers faster".into(),
        diff: "+ unsafe { buf.set_len(n) }".into(),
    };
    let (transcript, code) = match wf.run(change).await {
        Ok(done) => {
            println!(
                "decision: merged={} ({})",
                done.output.merged, done.output.why
            );
            (done.transcript, 0)
        }
        Err(aborted) => {
            println!("stopped: {}", aborted.error);
            (aborted.transcript, 1)
        }
    };
    println!("\nthe record:\n{transcript}");
    for r in transcript.records().unwrap_or_default() {
        if let Some(Lineage::Outcome { branch, .. }) = &r.lineage {
            println!(
                "view of branch {branch}, from `{}` (record #{}): {}",
                r.from, r.seq, r.payload
            );
        }
    }
    println!("merges made: {:?}", wf.deps().effects.all());
    std::process::exit(code);
}
