//! A writer/reviewer loop whose bound is enforced.
//!
//! Run: `cargo run --example writer_reviewer`

use examples::writer_reviewer::{ScriptedReviewer, review, topic};

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
}
