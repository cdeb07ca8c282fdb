//! The README's main example: the staging-deploy incident, stopped at the seam.
//!
//! Run: `cargo run --example staging_deploy`

use examples::deploy_workflow::{FakeCloud, deploy, staging_goal, staging_root};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    println!("== run 1: the VPC lookup returns an incomplete first page ==");
    let cloud = FakeCloud::incident();
    let wf = deploy::Workflow::new(staging_root(), cloud);
    match wf.run(staging_goal()).await {
        Ok(done) => {
            println!("unexpected: the run completed: {:?}", done.output);
            std::process::exit(1);
        }
        Err(aborted) => {
            print!("{}", aborted.transcript);
            println!("stopped at the seam: {}", aborted.error);
        }
    }
    println!("route changes applied: none");

    println!();
    println!("== run 2: the lookup lists every VPC ==");
    let wf = deploy::Workflow::new(staging_root(), FakeCloud::one_page());
    match wf.run(staging_goal()).await {
        Ok(done) => {
            print!("{}", done.transcript);
            println!("completed: {:?}", done.output);
        }
        Err(aborted) => {
            print!("{}", aborted.transcript);
            println!("unexpected: {aborted}");
            std::process::exit(1);
        }
    }
    println!();
    println!(
        "max hops of any run (computed at compile time): {}",
        deploy::MAX_HOPS
    );
}
