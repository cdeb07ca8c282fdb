//! The reference workload of the peer benchmarks (`shared/bench`): planner
//! -> worker -> reviewer, the reviewer sending work back to the worker until
//! `remaining` reaches 0, then ending. One run is `1 + 2 * rounds` turns.
//!
//! Unlike the peers, every transition here gets a receipt, a pre- and a
//! post-condition, a loop-bound check and a transfer record holding the
//! exact serialized payload.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use workflow_core::prelude::*;

/// The highest `rounds` a run of this workflow may ask for.
pub const MAX_ROUNDS: u32 = 1000;

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
        /// Under the receiver's authority.
        #[authority]
        pub scope: Scope<authority::Count>,
        /// None needed.
        #[evidence]
        pub evidence: Vec<Evidence>,
        /// None left open.
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        /// No stop condition beyond the bound.
        #[stop]
        pub stop: StopWhen,
        /// Rounds left.
        pub remaining: u32,
        /// Rounds done.
        pub done: u32,
    }

    /// The same work, for review.
    #[handoff]
    pub struct Review {
        /// Check the round.
        #[operation]
        pub op: Operation,
        /// Under the reviewer's authority.
        #[authority]
        pub scope: Scope<authority::Judge>,
        /// None needed.
        #[evidence]
        pub evidence: Vec<Evidence>,
        /// None left open.
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        /// No stop condition beyond the bound.
        #[stop]
        pub stop: StopWhen,
        /// Rounds left.
        pub remaining: u32,
        /// Rounds done.
        pub done: u32,
    }

    fn work(scope: Scope<authority::Count>, remaining: u32, done: u32) -> Work {
        Work {
            op: Operation::new("round", ""),
            scope,
            evidence: Vec::new(),
            open: Vec::new(),
            stop: StopWhen::at_hop(MAX_HOPS),
            remaining,
            done,
        }
    }

    /// Starts the loop.
    #[agent(owns = [Plan], to = [worker])]
    #[pre(*rounds <= MAX_ROUNDS, "at most MAX_ROUNDS rounds")]
    async fn planner(rounds: u32, cx: planner::Context<'_>) -> Result<planner::Next, Reject> {
        let scope = cx.lease(authority::Count).as_long_as_mine();
        Ok(planner::Next::Worker(work(scope, rounds, 0)))
    }

    /// Does one round.
    #[agent(owns = [Count], to = [reviewer])]
    #[pre(task.remaining > 0, "there is a round left to do")]
    async fn worker(task: Work, cx: worker::Context<'_>) -> Result<worker::Next, Reject> {
        Ok(worker::Next::Reviewer(Review {
            op: Operation::new("check", ""),
            scope: cx.lease(authority::Judge).as_long_as_mine(),
            evidence: task.evidence,
            open: task.open,
            stop: task.stop,
            remaining: task.remaining - 1,
            done: task.done + 1,
        }))
    }

    /// Sends the work back, or ends.
    #[agent(owns = [Judge], to = [worker(max = 1000), END])]
    #[post(!matches!(out, reviewer::Next::End(t) if t.done == 0), "a run ends with work done")]
    async fn reviewer(r: Review, cx: reviewer::Context<'_>) -> Result<reviewer::Next, Reject> {
        Ok(if r.remaining == 0 {
            reviewer::Next::End(Tally { done: r.done })
        } else {
            let scope = cx.lease(authority::Count).as_long_as_mine();
            reviewer::Next::Worker(work(scope, r.remaining, r.done))
        })
    }
}
