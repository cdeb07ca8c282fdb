//! The loop workload written by hand, without the macros
//! (`examples/src/hand_written.rs`), run once and printed.
//!
//! Run: `cargo run --example hand_written -- [ROUNDS]` (default 3)

use examples::hand_written::counter;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let rounds = match std::env::args().nth(1) {
        None => 3,
        Some(a) => a.parse().unwrap_or_else(|_| {
            eprintln!("usage: hand_written [ROUNDS] (a whole number), got `{a}`");
            std::process::exit(2)
        }),
    };
    println!(
        "hand-written workflow `{}`: {} agents, {} edges, MAX_HOPS = {}",
        counter::GRAPH.name,
        counter::GRAPH.agents.len(),
        counter::GRAPH.edges.len(),
        counter::MAX_HOPS
    );
    let wf = counter::Workflow::new((), ());
    match wf.run(rounds).await {
        Ok(done) => {
            print!("{}", done.transcript);
            println!("done: {} rounds", done.output.done);
        }
        Err(aborted) => {
            print!("{}", aborted.transcript);
            println!("{aborted}");
            std::process::exit(1);
        }
    }
}
