//! What a turn's context says of its turn (its hop, the lease it works
//! under) is the same in its body, in its pre- and post-conditions, and in
//! a turn returned to after its handoff was rejected: the runtime lends the
//! context its view of the turn (issue 18), and every way a turn starts
//! sets that view.

use std::sync::Mutex;

use workflow_core::prelude::*;

/// What each of `middle`'s turns saw from its body: (returned, hop, lease
/// seq, earlier turns). One test runs this workflow.
static BODY: Mutex<Vec<Seen>> = Mutex::new(Vec::new());

/// (returned, hop, lease seq, earlier turns).
type Seen = (bool, u32, Option<u32>, usize);
/// The hops `middle`'s pre-condition saw.
static PRE_HOPS: Mutex<Vec<u32>> = Mutex::new(Vec::new());

fn note_pre(hop: u32) -> bool {
    PRE_HOPS.lock().unwrap().push(hop);
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
    async fn middle(_task: ToMiddle, cx: middle::Context<'_>) -> Result<middle::Next, Reject> {
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
    // `last` ran at hop 3, on the second attempt.
    assert_eq!(done.output, 31);
}
