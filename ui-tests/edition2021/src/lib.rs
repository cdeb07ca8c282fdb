//! A workflow in a crate of edition 2021: the expansion of `#[workflow]`
//! compiles and runs here as in the workspace's edition 2024 (an agent's
//! `async fn` is emitted as a function returning a future, whose capture of
//! the context's lifetime must not depend on the caller's edition).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use workflow_core::prelude::*;

/// What a run ends with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Tally {
    /// Rounds done.
    pub done: u32,
}

#[workflow(entry = planner, output = Tally)]
pub mod counter {
    use super::*;

    /// The work handed between agents.
    #[handoff]
    pub struct Work {
        /// Do one round.
        #[operation]
        pub op: Operation,
        /// Under the worker's authority.
        #[authority]
        pub scope: Scope<authority::Count>,
        /// None needed.
        #[evidence]
        pub evidence: Vec<Evidence>,
        /// None left open.
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        /// Bounded by the hop cap.
        #[stop]
        pub stop: StopWhen,
        /// Rounds left.
        pub remaining: u32,
        /// Rounds done.
        pub done: u32,
    }

    fn checked(remaining: u32) -> Result<u32, Reject> {
        remaining
            .checked_sub(1)
            .ok_or_else(|| Reject::because("no round left"))
    }

    /// Starts the loop.
    #[agent(owns = [Plan], to = [worker])]
    async fn planner(rounds: u32, cx: planner::Context<'_>) -> Result<planner::Next, Reject> {
        Ok(planner::Next::Worker(Work {
            op: Operation::new("round", ""),
            scope: cx.lease(authority::Count).as_long_as_mine(),
            evidence: Vec::new(),
            open: Vec::new(),
            stop: StopWhen::at_hop(MAX_HOPS),
            remaining: rounds,
            done: 0,
        }))
    }

    /// Does one round, or ends; its context and `?` used inside the body.
    #[agent(owns = [Count], to = [worker(max = 5), END])]
    async fn worker(mut task: Work, cx: worker::Context<'_>) -> Result<worker::Next, Reject> {
        if task.remaining == 0 {
            return Ok(worker::Next::End(Tally { done: task.done }));
        }
        task.remaining = checked(task.remaining)?;
        task.done += 1;
        task.scope = cx.lease(authority::Count).as_long_as_mine();
        Ok(worker::Next::Worker(task))
    }
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn a_workflow_of_edition_2021_runs_to_its_end() {
        let wf = super::counter::Workflow::new((), ());
        let done = wf.run(3).await.expect("the run ends");
        assert_eq!(done.output.done, 3);
        // The input, the planner's handoff, three rounds handed on and
        // the end.
        assert_eq!(done.transcript.len(), 6);
    }
}
