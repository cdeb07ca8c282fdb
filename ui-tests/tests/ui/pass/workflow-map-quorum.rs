//! A map (`to = [map(worker, max = 4)]`) whose join takes a quorum compiles
//! without warnings in a crate that denies them, and runs: the join gets
//! the items' outcomes in the order of the list.

#![deny(warnings, missing_docs, unused, nonstandard_style, rust_2018_idioms)]

//! A crate under `#![deny(warnings)]`.

use workflow_core::prelude::*;

/// The workflow.
#[workflow(entry = dispatch, output = Vec<u32>)]
pub mod files {
    use super::*;

    /// One item's work.
    #[handoff]
    pub struct Job {
        /// The item's contract.
        #[contract]
        pub contract: Contract<authority::Work>,
        /// The item.
        pub item: u32,
    }

    /// Hands each item to its own worker, at most four.
    #[agent(owns = [Dispatch], to = [map(worker, max = 4)])]
    async fn dispatch(items: Vec<u32>, cx: dispatch::Context<'_>) -> Result<dispatch::Next, Reject> {
        let jobs = items.into_iter().map(|item| Job {
            contract: Contract::builder(
                Operation::new("work", ""),
                cx.lease(authority::Work).until_hop(cx.hop() + 5),
                StopWhen::at_hop(cx.hop() + 6),
            )
            .evidence([])
            .open([])
            .build(),
            item,
        });
        Ok(dispatch::Next::Map(jobs.collect()))
    }

    /// Doubles its item.
    #[agent(owns = [Work], to = [gather])]
    async fn worker(job: Job, _cx: worker::Context<'_>) -> Result<worker::Next, Reject> {
        Ok(worker::Next::Gather(job.item * 2))
    }

    /// Goes on once three items are done.
    #[agent(owns = [Gather], join = [worker: [u32]], quorum = 3, to = [END])]
    async fn gather(all: gather::Joined, _cx: gather::Context<'_>) -> Result<gather::Next, Reject> {
        Ok(gather::Next::End(all.worker.iter().filter_map(|b| b.done().copied()).collect()))
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let done = files::Workflow::new((), ()).run(vec![1, 2, 3]).await.unwrap();
    assert_eq!(done.output, [2, 4, 6]);
    assert_eq!(files::MAX_HOPS, 6);
}
