//! What a turn's context says of its turn (its hop, the lease it works
//! under, what it spent) is the same in its body, in its pre- and
//! post-conditions, and in a turn returned to after its handoff was
//! rejected: the runtime lends the context its view of the turn (issue
//! 18), and every way a turn starts sets that view. A fan-out branch's
//! post-conditions see its body's view too.

use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use workflow_core::prelude::*;

/// What each of `middle`'s turns saw from its body: (returned, hop, lease
/// seq, earlier turns). One test runs this workflow.
static BODY: Mutex<Vec<Seen>> = Mutex::new(Vec::new());

/// (returned, hop, lease seq, earlier turns).
type Seen = (bool, u32, Option<u32>, usize);
/// The hops `middle`'s pre-condition saw.
static PRE_HOPS: Mutex<Vec<u32>> = Mutex::new(Vec::new());
/// What `middle`'s post-condition saw: (returned, tokens spent).
static POST: Mutex<Vec<(bool, u64)>> = Mutex::new(Vec::new());

fn note_pre(hop: u32) -> bool {
    PRE_HOPS.lock().unwrap().push(hop);
    true
}

fn note_post(returned: bool, tokens: u64) -> bool {
    POST.lock().unwrap().push((returned, tokens));
    true
}

#[workflow(entry = first, output = u32)]
pub mod relay {
    use super::*;

    /// A handoff to `middle`.
    #[handoff]
    pub struct ToMiddle {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Relay>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
    }

    /// A handoff to `last`: its first try is refused at the receipt.
    #[handoff]
    pub struct ToLast {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Finish>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
        pub attempt: u32,
    }

    #[agent(owns = [Start], to = [middle])]
    async fn first(_nothing: (), cx: first::Context<'_>) -> Result<first::Next, Reject> {
        Ok(first::Next::Middle(ToMiddle {
            op: Operation::new("relay", ""),
            scope: cx.lease(authority::Relay).as_long_as_mine(),
            evidence: vec![],
            open: vec![],
            stop: StopWhen::at_hop(MAX_HOPS),
        }))
    }

    /// Works under the lease record 1 granted, in its returned turn too.
    #[agent(owns = [Relay], to = [last])]
    #[pre(super::note_pre(cx.hop()), "the hop is noted")]
    #[post(cx.lease_id().map(|l| l.seq) == Some(1), "the turn works under record 1's lease")]
    #[post(super::note_post(cx.returned().is_some(), cx.spent().total_tokens()), "noted")]
    async fn middle(_task: ToMiddle, cx: middle::Context<'_>) -> Result<middle::Next, Reject> {
        cx.charge(Usage::tokens(5, 0))?;
        let returned = cx.returned().is_some();
        let lease = cx.lease_id().map(|l| l.seq);
        let earlier = cx.earlier_turns().len();
        super::BODY
            .lock()
            .unwrap()
            .push((returned, cx.hop(), lease, earlier));
        Ok(middle::Next::Last(ToLast {
            op: Operation::new("finish", ""),
            scope: cx.lease(authority::Finish).as_long_as_mine(),
            evidence: vec![],
            open: vec![],
            stop: StopWhen::at_hop(MAX_HOPS),
            attempt: u32::from(returned),
        }))
    }

    #[agent(owns = [Finish], to = [END], on_reject = sender(max = 1))]
    #[pre(task.attempt > 0, "a second attempt")]
    async fn last(task: ToLast, cx: last::Context<'_>) -> Result<last::Next, Reject> {
        Ok(last::Next::End(cx.hop() * 10 + task.attempt))
    }
}

#[tokio::test]
async fn a_returned_turn_sees_its_own_lease_and_hop_in_its_body_and_conditions() {
    let wf = relay::Workflow::new((), ());
    let done = wf.run(()).await.expect("completes on the second attempt");
    let body = BODY.lock().unwrap().clone();
    // The first turn and the returned one: both under record 1's lease,
    // each at its own hop (the refused receipt counts no hop); the returned
    // turn sees the first as its earlier turn.
    assert_eq!(body, vec![(false, 1, Some(1), 0), (true, 2, Some(1), 1)]);
    // The pre-condition ran once, at the first delivery, at the body's hop.
    assert_eq!(*PRE_HOPS.lock().unwrap(), vec![1]);
    // The post-conditions saw the turn as its body left it: returned to
    // (the second time), its tokens spent.
    assert_eq!(*POST.lock().unwrap(), vec![(false, 5), (true, 10)]);
    // `last` ran at hop 3, on the second attempt.
    assert_eq!(done.output, 31);
}

/// What a branch's body saw of its turn.
#[derive(Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Viewed {
    pub hop: u32,
    pub lease: Option<u32>,
    pub tokens: u64,
}

/// A fan-out whose `near` branch hands on what its body saw, and whose
/// post-condition checks that it sees the same.
#[workflow(entry = lead, output = Vec<String>)]
pub mod fan {
    use super::*;

    #[handoff]
    pub struct Ask {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Near>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
    }

    #[handoff]
    pub struct FarAsk {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Far>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
    }

    #[agent(owns = [Lead], to = [parallel(near, far)])]
    async fn lead(_nothing: (), cx: lead::Context<'_>) -> Result<lead::Next, Reject> {
        Ok(lead::Next::Parallel(lead::Parallel {
            near: Ask {
                op: Operation::new("look", ""),
                scope: cx.lease(authority::Near).until_hop(cx.hop() + 3),
                evidence: vec![],
                open: vec![],
                stop: StopWhen::at_hop(cx.hop() + 4),
            },
            far: FarAsk {
                op: Operation::new("look", ""),
                scope: cx.lease(authority::Far).until_hop(cx.hop() + 3),
                evidence: vec![],
                open: vec![],
                stop: StopWhen::at_hop(cx.hop() + 4),
            },
        }))
    }

    #[agent(owns = [Near], to = [judge])]
    #[post(
        matches!(out, near::Next::Judge(v) if *v == Viewed {
            hop: cx.hop(),
            lease: cx.lease_id().map(|l| l.seq),
            tokens: cx.spent().total_tokens(),
        }),
        "the post sees what the body saw"
    )]
    async fn near(_ask: Ask, cx: near::Context<'_>) -> Result<near::Next, Reject> {
        cx.charge(Usage::tokens(7, 0))?;
        Ok(near::Next::Judge(Viewed {
            hop: cx.hop(),
            lease: cx.lease_id().map(|l| l.seq),
            tokens: cx.spent().total_tokens(),
        }))
    }

    #[agent(owns = [Far], to = [judge])]
    async fn far(_ask: FarAsk, cx: far::Context<'_>) -> Result<far::Next, Reject> {
        Ok(far::Next::Judge(cx.hop()))
    }

    #[agent(owns = [Judge], join = [near: Viewed, far: u32], to = [END])]
    async fn judge(views: judge::Joined, _cx: judge::Context<'_>) -> Result<judge::Next, Reject> {
        let near = match &views.near {
            Branch::Done(v) => format!(
                "near: hop {} lease {:?} tokens {}",
                v.hop, v.lease, v.tokens
            ),
            other => format!("near: {other}"),
        };
        let far = match &views.far {
            Branch::Done(hop) => format!("far: hop {hop}"),
            other => format!("far: {other}"),
        };
        Ok(judge::Next::End(vec![near, far]))
    }
}

#[tokio::test]
async fn a_branchs_post_condition_sees_its_bodys_view_of_the_turn() {
    let done = fan::Workflow::new((), ()).run(()).await.expect("completes");
    // `near` ran at hop 1 under the lease its start (record 1) granted,
    // its 7 tokens spent; `far` at hop 2. Its post-condition saw the same
    // (a view made when the branch is settled says hop 2 and the last
    // record's lease).
    assert_eq!(
        done.output,
        ["near: hop 1 lease Some(1) tokens 7", "far: hop 2"]
    );
}

/// What `dispatch`'s turns saw: (hop, lease seq, the turn its call's
/// citation names). One test runs this workflow.
static DISPATCHED: Mutex<Vec<Dispatched>> = Mutex::new(Vec::new());

/// (hop, lease seq, cited turn).
type Dispatched = (u32, Option<u32>, Option<u32>);

/// A map whose fan-out agent makes a journaled tool call: a run cut after
/// its first start runs that turn again (a map's items are not restored
/// from its starts), on the record it worked on.
#[workflow(entry = lead, output = usize, deps = std::sync::Arc<std::sync::atomic::AtomicU32>)]
pub mod rerun {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[handoff]
    pub struct Plan {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Dispatch>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
    }

    #[handoff]
    pub struct Item {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Work>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
        pub n: u32,
    }

    /// Counts its calls: a journaled call served again is not one.
    #[tool(needs = Dispatch, effect = write)]
    async fn probe(_nothing: (), calls: &Arc<AtomicU32>) -> Result<u32, ToolError> {
        Ok(calls.fetch_add(1, Ordering::SeqCst) + 1)
    }

    #[agent(owns = [Start], to = [dispatch])]
    async fn lead(_nothing: (), cx: lead::Context<'_>) -> Result<lead::Next, Reject> {
        Ok(lead::Next::Dispatch(Plan {
            op: Operation::new("plan", ""),
            scope: cx.lease(authority::Dispatch).until_hop(cx.hop() + 5),
            evidence: vec![],
            open: vec![],
            stop: StopWhen::at_hop(cx.hop() + 6),
        }))
    }

    #[agent(owns = [Dispatch], tools = [probe], to = [map(worker, max = 4)])]
    async fn dispatch(_plan: Plan, cx: dispatch::Context<'_>) -> Result<dispatch::Next, Reject> {
        cx.call(tools::probe, ()).await?;
        let cited = match cx.citation(tools::probe)? {
            Citation::ToolCall { turn, .. } => Some(turn),
            _ => None,
        };
        let lease = cx.lease_id().map(|l| l.seq);
        super::DISPATCHED
            .lock()
            .unwrap()
            .push((cx.hop(), lease, cited));
        let items = (0..2).map(|n| Item {
            op: Operation::new("work", ""),
            scope: cx.lease(authority::Work).until_hop(cx.hop() + 3),
            evidence: vec![],
            open: vec![],
            stop: StopWhen::at_hop(cx.hop() + 5),
            n,
        });
        Ok(dispatch::Next::Map(items.collect()))
    }

    #[agent(owns = [Work], to = [gather])]
    async fn worker(item: Item, _cx: worker::Context<'_>) -> Result<worker::Next, Reject> {
        Ok(worker::Next::Gather(item.n))
    }

    #[agent(owns = [Gather], join = [worker: [u32]], to = [END])]
    async fn gather(
        done: gather::Joined,
        _cx: gather::Context<'_>,
    ) -> Result<gather::Next, Reject> {
        Ok(gather::Next::End(done.worker.len()))
    }
}

#[tokio::test]
async fn a_fan_out_agents_turn_run_again_on_resume_sees_its_first_runs_view() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};
    use workflow_core::ledger::{Ledger, MemoryLedger};

    let ledger = Arc::new(MemoryLedger::new());
    let calls = Arc::new(AtomicU32::new(0));
    let wf = rerun::Workflow::new((), calls.clone()).with_ledger(ledger.clone());
    let done = wf.run(()).await.expect("completes");
    assert_eq!(done.output, 2);
    let run_id = done.transcript.run_id();
    let whole = ledger.records(run_id).unwrap();
    // #0 the input, #1 the plan, #2 #3 the items' starts, #4 #5 their
    // outcomes, #6 the join, #7 the end.
    assert_eq!(whole.len(), 8);
    // The dispatcher's call is journaled under the record its turn's
    // outcome takes: the first start.
    let journaled = ledger.tool_calls(run_id, 2).unwrap();
    assert_eq!(journaled.len(), 1);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    // Cut after the first start, its journal kept.
    let crashed = Arc::new(MemoryLedger::new());
    for r in whole.iter().take(3) {
        crashed.append(r).unwrap();
    }
    for entry in &journaled {
        crashed.append_tool_call(run_id, 2, entry).unwrap();
    }
    let wf = rerun::Workflow::new((), calls.clone()).with_ledger(crashed.clone());
    let resumed = wf.resume(run_id).await.expect("resumes");
    assert_eq!(resumed.output, 2);
    // The turn ran again at the same hop, under the lease record 1
    // granted, its call cited under the first start's number and served
    // from the journal, not made again.
    let seen = DISPATCHED.lock().unwrap().clone();
    assert_eq!(seen, vec![(1, Some(1), Some(2)), (1, Some(1), Some(2))]);
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "the journaled call was served"
    );
    let again = crashed.records(run_id).unwrap();
    assert_eq!(again.len(), whole.len());
    crashed.verify_run(run_id).unwrap();
}
