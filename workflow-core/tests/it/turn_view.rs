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
