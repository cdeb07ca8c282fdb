//! The fan-out workload of the peer benchmarks (issue 13), on this library:
//! a dispatcher hands one ask to each of three branches at once, a join
//! receives every branch's view and checks that none is missing, then sends
//! the next round back to the dispatcher, `rounds` times, then ends. One
//! round is 1 dispatch, 3 branch turns and 1 join turn.
//!
//! The peers run the same shape: `examples/peers/fanout_langgraph.py`
//! (LangGraph's `Send`) and `examples/peers/fanout_pydantic_graph.py`
//! (pydantic-graph's `map` and `join`). Unlike the peers, every branch turn
//! here gets its own receipt and pre-condition, and every transfer (each
//! branch's start and outcome, and the join citing every branch's head) is
//! recorded with its exact payload.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use workflow_core::prelude::*;

/// The highest `rounds` a run of this workflow may ask for.
pub const MAX_ROUNDS: u32 = 1000;

/// What a run is asked to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Job {
    /// Rounds to run.
    pub rounds: u32,
    /// How long each branch body sleeps, in milliseconds (0: not at all):
    /// shows whether the branches of a round overlap.
    pub sleep_ms: u64,
}

/// What a run ends with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Tally {
    /// Rounds done.
    pub done: u32,
    /// Branch views the join received, over all rounds.
    pub views: u32,
}

/// Where the run is: handed to each branch with its ask and back to the
/// join with its view (the join's input is the branches' views only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Progress {
    /// Rounds left, the current one included.
    pub remaining: u32,
    /// Rounds done.
    pub done: u32,
    /// Branch views the join received so far.
    pub views: u32,
    /// Branches a round: the views the join must receive.
    pub width: u32,
    /// How long each branch body sleeps, in milliseconds.
    pub sleep_ms: u64,
}

impl Progress {
    /// The first round's progress.
    fn start(job: Job, width: u32) -> Self {
        Progress {
            remaining: job.rounds,
            done: 0,
            views: 0,
            width,
            sleep_ms: job.sleep_ms,
        }
    }
}

/// What a branch hands the join: its index, a verdict, and the run's
/// progress as the branch received it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct View {
    /// The branch's index.
    pub branch: u32,
    /// Approve (odd branches) or revise (even ones).
    pub approve: bool,
    /// The progress the branch was asked under.
    pub progress: Progress,
}

/// One branch's turn: sleeps when asked, then hands on its view.
async fn view(branch: u32, progress: Progress) -> View {
    if progress.sleep_ms > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(progress.sleep_ms)).await;
    }
    View {
        branch,
        approve: branch % 2 == 1,
        progress,
    }
}

/// The join's check, in both forms: every branch is done, in order, each
/// with its own index, all asked under the same progress, none missing.
/// Returns the progress after this round: `Ok(Err(tally))` when it was the
/// last one.
fn join_round<'a>(
    views: impl IntoIterator<Item = &'a Branch<View>>,
) -> Result<Result<Progress, Tally>, Reject> {
    let mut progress: Option<Progress> = None;
    let mut seen = 0;
    for (want, view) in (0..).zip(views) {
        match view {
            Branch::Done(v) if v.branch == want && progress.is_none_or(|p| p == v.progress) => {
                progress = Some(v.progress);
                seen += 1;
            }
            other => {
                return Err(Reject::because(format!(
                    "branch {want} gave no view of this round: {other}"
                )));
            }
        }
    }
    let p = progress.ok_or_else(|| Reject::because("no branch gave a view"))?;
    if seen != p.width {
        return Err(Reject::because(format!(
            "{seen} views for a round of {} branches",
            p.width
        )));
    }
    let next = Progress {
        remaining: p.remaining - 1,
        done: p.done + 1,
        views: p.views + p.width,
        ..p
    };
    Ok(if next.remaining == 0 {
        Err(Tally {
            done: next.done,
            views: next.views,
        })
    } else {
        Ok(next)
    })
}

#[workflow(entry = begin, output = Tally)]
pub mod fanout3 {
    use super::*;

    /// A round to dispatch.
    #[handoff]
    pub struct Round {
        /// Dispatch one round.
        #[operation]
        pub op: Operation,
        /// Under the dispatcher's authority.
        #[authority]
        pub scope: Scope<authority::Dispatch>,
        /// None needed.
        #[evidence]
        pub evidence: Vec<Evidence>,
        /// None left open.
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        /// No stop condition beyond the bound.
        #[stop]
        pub stop: StopWhen,
        /// Where the run is.
        pub progress: Progress,
    }

    /// Branch 0's ask.
    #[handoff]
    pub struct Ask0 {
        /// Give a view.
        #[operation]
        pub op: Operation,
        /// Under branch 0's authority.
        #[authority]
        pub scope: Scope<authority::View0>,
        /// None needed.
        #[evidence]
        pub evidence: Vec<Evidence>,
        /// None left open.
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        /// No stop condition beyond the bound.
        #[stop]
        pub stop: StopWhen,
        /// Where the run is.
        pub progress: Progress,
    }

    /// Branch 1's ask.
    #[handoff]
    pub struct Ask1 {
        /// Give a view.
        #[operation]
        pub op: Operation,
        /// Under branch 1's authority.
        #[authority]
        pub scope: Scope<authority::View1>,
        /// None needed.
        #[evidence]
        pub evidence: Vec<Evidence>,
        /// None left open.
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        /// No stop condition beyond the bound.
        #[stop]
        pub stop: StopWhen,
        /// Where the run is.
        pub progress: Progress,
    }

    /// Branch 2's ask.
    #[handoff]
    pub struct Ask2 {
        /// Give a view.
        #[operation]
        pub op: Operation,
        /// Under branch 2's authority.
        #[authority]
        pub scope: Scope<authority::View2>,
        /// None needed.
        #[evidence]
        pub evidence: Vec<Evidence>,
        /// None left open.
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        /// No stop condition beyond the bound.
        #[stop]
        pub stop: StopWhen,
        /// Where the run is.
        pub progress: Progress,
    }

    fn round(scope: Scope<authority::Dispatch>, progress: Progress) -> Round {
        Round {
            op: Operation::new("dispatch", ""),
            scope,
            evidence: Vec::new(),
            open: Vec::new(),
            stop: StopWhen::at_hop(MAX_HOPS),
            progress,
        }
    }

    /// Starts the first round.
    #[agent(owns = [Begin], to = [dispatch])]
    #[pre(job.rounds > 0 && job.rounds <= MAX_ROUNDS, "between 1 and MAX_ROUNDS rounds")]
    async fn begin(job: Job, cx: begin::Context<'_>) -> Result<begin::Next, Reject> {
        let scope = cx.lease(authority::Dispatch).as_long_as_mine();
        Ok(begin::Next::Dispatch(round(scope, Progress::start(job, 3))))
    }

    /// Hands one ask to each branch, at once.
    #[agent(owns = [Dispatch], to = [parallel(view0, view1, view2)])]
    #[pre(r.progress.remaining > 0, "there is a round left to dispatch")]
    async fn dispatch(r: Round, cx: dispatch::Context<'_>) -> Result<dispatch::Next, Reject> {
        let stop = StopWhen::at_hop(MAX_HOPS);
        Ok(dispatch::Next::Parallel(dispatch::Parallel {
            view0: Ask0 {
                op: Operation::new("view", "0"),
                scope: cx.lease(authority::View0).as_long_as_mine(),
                evidence: Vec::new(),
                open: Vec::new(),
                stop: stop.clone(),
                progress: r.progress,
            },
            view1: Ask1 {
                op: Operation::new("view", "1"),
                scope: cx.lease(authority::View1).as_long_as_mine(),
                evidence: Vec::new(),
                open: Vec::new(),
                stop: stop.clone(),
                progress: r.progress,
            },
            view2: Ask2 {
                op: Operation::new("view", "2"),
                scope: cx.lease(authority::View2).as_long_as_mine(),
                evidence: Vec::new(),
                open: Vec::new(),
                stop,
                progress: r.progress,
            },
        }))
    }

    /// Branch 0.
    #[agent(owns = [View0], to = [join])]
    async fn view0(ask: Ask0, _cx: view0::Context<'_>) -> Result<view0::Next, Reject> {
        Ok(view0::Next::Join(view(0, ask.progress).await))
    }

    /// Branch 1.
    #[agent(owns = [View1], to = [join])]
    async fn view1(ask: Ask1, _cx: view1::Context<'_>) -> Result<view1::Next, Reject> {
        Ok(view1::Next::Join(view(1, ask.progress).await))
    }

    /// Branch 2.
    #[agent(owns = [View2], to = [join])]
    async fn view2(ask: Ask2, _cx: view2::Context<'_>) -> Result<view2::Next, Reject> {
        Ok(view2::Next::Join(view(2, ask.progress).await))
    }

    /// Receives every view, checks none is missing, then the next round or the end.
    #[agent(owns = [Join], join = [view0: View, view1: View, view2: View], to = [dispatch(max = 1000), END])]
    async fn join(views: join::Joined, cx: join::Context<'_>) -> Result<join::Next, Reject> {
        Ok(
            match join_round([&views.view0, &views.view1, &views.view2])? {
                Err(tally) => join::Next::End(tally),
                Ok(p) => {
                    join::Next::Dispatch(round(cx.lease(authority::Dispatch).as_long_as_mine(), p))
                }
            },
        )
    }
}

/// The most branches one round of [`fanout_map`] may start.
pub const MAX_WIDTH: usize = 64;

/// The same workload with a dynamic fan-out: the dispatcher maps one ask
/// per branch over a list of `width` items (`map(view, max = 64)`), and the
/// join receives the views in list order.
#[workflow(entry = begin, output = Tally)]
pub mod fanout_map {
    use super::*;

    /// What a run of the map form is asked to do.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
    pub struct MapJob {
        /// Branches per round, at most [`MAX_WIDTH`].
        pub width: u32,
        /// Rounds, and each branch's sleep.
        pub job: Job,
    }

    /// A round to dispatch.
    #[handoff]
    pub struct Round {
        /// Dispatch one round.
        #[operation]
        pub op: Operation,
        /// Under the dispatcher's authority.
        #[authority]
        pub scope: Scope<authority::Dispatch>,
        /// None needed.
        #[evidence]
        pub evidence: Vec<Evidence>,
        /// None left open.
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        /// No stop condition beyond the bound.
        #[stop]
        pub stop: StopWhen,
        /// Where the run is.
        pub progress: Progress,
    }

    /// One item's ask.
    #[handoff]
    pub struct Ask {
        /// Give a view.
        #[operation]
        pub op: Operation,
        /// Under the branches' authority.
        #[authority]
        pub scope: Scope<authority::Look>,
        /// None needed.
        #[evidence]
        pub evidence: Vec<Evidence>,
        /// None left open.
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        /// No stop condition beyond the bound.
        #[stop]
        pub stop: StopWhen,
        /// The item's index in the list.
        pub index: u32,
        /// Where the run is.
        pub progress: Progress,
    }

    fn round(scope: Scope<authority::Dispatch>, progress: Progress) -> Round {
        Round {
            op: Operation::new("dispatch", ""),
            scope,
            evidence: Vec::new(),
            open: Vec::new(),
            stop: StopWhen::at_hop(MAX_HOPS),
            progress,
        }
    }

    /// Starts the first round.
    #[agent(owns = [Begin], to = [dispatch])]
    #[pre(job.job.rounds > 0 && job.job.rounds <= MAX_ROUNDS, "between 1 and MAX_ROUNDS rounds")]
    #[pre(job.width > 0 && job.width as usize <= MAX_WIDTH, "between 1 and MAX_WIDTH branches")]
    async fn begin(job: MapJob, cx: begin::Context<'_>) -> Result<begin::Next, Reject> {
        let scope = cx.lease(authority::Dispatch).as_long_as_mine();
        Ok(begin::Next::Dispatch(round(
            scope,
            Progress::start(job.job, job.width),
        )))
    }

    /// Hands one ask per item to `view`, all at once.
    #[agent(owns = [Dispatch], to = [map(view, max = 64)])]
    #[pre(r.progress.remaining > 0, "there is a round left to dispatch")]
    async fn dispatch(r: Round, cx: dispatch::Context<'_>) -> Result<dispatch::Next, Reject> {
        let asks = (0..r.progress.width)
            .map(|index| Ask {
                op: Operation::new("view", ""),
                scope: cx.lease(authority::Look).as_long_as_mine(),
                evidence: Vec::new(),
                open: Vec::new(),
                stop: StopWhen::at_hop(MAX_HOPS),
                index,
                progress: r.progress,
            })
            .collect();
        Ok(dispatch::Next::Map(asks))
    }

    /// One item's branch.
    #[agent(owns = [Look], to = [join])]
    async fn view(ask: Ask, _cx: view::Context<'_>) -> Result<view::Next, Reject> {
        Ok(view::Next::Join(super::view(ask.index, ask.progress).await))
    }

    /// Receives every view in list order, checks none is missing, then the
    /// next round or the end.
    #[agent(owns = [Join], join = [view: [View]], to = [dispatch(max = 1000), END])]
    async fn join(all: join::Joined, cx: join::Context<'_>) -> Result<join::Next, Reject> {
        Ok(match join_round(&all.view)? {
            Err(tally) => join::Next::End(tally),
            Ok(p) => {
                join::Next::Dispatch(round(cx.lease(authority::Dispatch).as_long_as_mine(), p))
            }
        })
    }
}
