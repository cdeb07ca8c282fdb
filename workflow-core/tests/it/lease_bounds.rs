//! Leases that are bounded: the scope a sender puts in a handoff must
//! expire (unless its authority is declared open-ended), and never later
//! than what the sender itself works under (its own scope, the run's hop
//! cap, the run's deadline). The sender's word is checked at the receipt,
//! never clamped.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use serde::{Deserialize, Serialize};
use workflow_core::prelude::*;

use crate::fixtures::assert_rejected;

/// The lease a sender grants.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum Grant {
    /// As long as the sender's own (the longest accepted).
    Mine,
    /// Until this hop.
    Hop(u32),
    /// Never expiring (`Scope::new`, or `"never"` on the wire).
    Never,
    /// This many ms from now.
    InMs(u64),
}

/// What the run's input asks each sender to grant.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Plan {
    /// The lease `first` grants `middle`.
    pub first: Grant,
    /// The lease `middle` grants `last`.
    pub middle: Grant,
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

#[workflow(entry = first, output = u32, deps = Arc<AtomicU32>)]
pub mod relay {
    use super::*;

    fn scope<A: workflow_core::Authority>(lease: Lease<A>, authority: A, grant: Grant) -> Scope<A> {
        match grant {
            Grant::Mine => lease.as_long_as_mine(),
            Grant::Hop(hop) => lease.until_hop(hop),
            Grant::Never => Scope::new(authority),
            Grant::InMs(ms) => lease.until_unix_ms(now_ms() + ms),
        }
    }

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
        pub plan: Plan,
    }

    /// A handoff to `last`.
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
    }

    #[agent(owns = [Start], to = [middle])]
    async fn first(plan: Plan, cx: first::Context<'_>) -> Result<first::Next, Reject> {
        Ok(first::Next::Middle(ToMiddle {
            op: Operation::new("relay", ""),
            scope: scope(cx.lease(authority::Relay), authority::Relay, plan.first),
            evidence: vec![],
            open: vec![],
            stop: StopWhen::at_hop(MAX_HOPS),
            plan,
        }))
    }

    /// Counts a body run: `middle` adds 1, `last` 100.
    #[tool(effect = read)]
    async fn tick(by: u32, runs: &Arc<AtomicU32>) -> Result<u32, ToolError> {
        Ok(runs.fetch_add(by, Ordering::SeqCst) + by)
    }

    #[agent(owns = [Relay], tools = [tick], to = [last])]
    async fn middle(task: ToMiddle, cx: middle::Context<'_>) -> Result<middle::Next, Reject> {
        cx.call(tools::tick, 1).await?;
        Ok(middle::Next::Last(ToLast {
            op: Operation::new("finish", ""),
            scope: scope(
                cx.lease(authority::Finish),
                authority::Finish,
                task.plan.middle,
            ),
            evidence: vec![],
            open: vec![],
            stop: StopWhen::at_hop(MAX_HOPS),
        }))
    }

    #[agent(owns = [Finish], tools = [tick], to = [END])]
    async fn last(_task: ToLast, cx: last::Context<'_>) -> Result<last::Next, Reject> {
        Ok(last::Next::End(cx.call(tools::tick, 100).await?))
    }
}

fn plan(first: Grant, middle: Grant) -> Plan {
    Plan { first, middle }
}

#[tokio::test]
async fn leases_as_long_as_the_senders_own_go_through() {
    let runs = Arc::new(AtomicU32::new(0));
    let done = relay::Workflow::new((), runs.clone())
        .run(plan(Grant::Mine, Grant::Mine))
        .await
        .expect("completes");
    assert_eq!(done.output, 101);
}

#[tokio::test]
async fn a_lease_that_never_expires_is_rejected_and_its_receiver_never_runs() {
    let runs = Arc::new(AtomicU32::new(0));
    let aborted = relay::Workflow::new((), runs.clone())
        .run(plan(Grant::Mine, Grant::Never))
        .await
        .expect_err("unbounded");
    let reason = RejectReason::LeaseUnbounded {
        authority: "Finish".into(),
    };
    assert_rejected(&aborted, "middle", "last", reason.clone());
    assert_eq!(runs.load(Ordering::SeqCst), 1, "`last` never ran");
    let json = serde_json::to_value(&reason).unwrap();
    assert_eq!(json["code"], "lease_unbounded");
}

#[tokio::test]
async fn a_lease_longer_than_the_senders_own_is_rejected_not_clamped() {
    let runs = Arc::new(AtomicU32::new(0));
    // `middle` works until hop 2 and grants until hop 3.
    let aborted = relay::Workflow::new((), runs.clone())
        .run(plan(Grant::Hop(2), Grant::Hop(3)))
        .await
        .expect_err("outlives");
    let reason = RejectReason::LeaseOutlivesGrantor {
        authority: "Finish".into(),
        lease: Expiry::AtHop(3),
        grantor: Expiry::AtHop(2),
        bound: "sender_scope".into(),
    };
    assert_rejected(&aborted, "middle", "last", reason);
    assert_eq!(runs.load(Ordering::SeqCst), 1, "`last` never ran");
    // Up to the sender's own hop: accepted.
    relay::Workflow::new((), runs.clone())
        .run(plan(Grant::Hop(2), Grant::Hop(2)))
        .await
        .expect("within the sender's own");
}

#[tokio::test]
async fn a_lease_in_another_unit_than_the_senders_own_cannot_be_shown_to_end_in_time() {
    let runs = Arc::new(AtomicU32::new(0));
    let aborted = relay::Workflow::new((), runs.clone())
        .run(plan(Grant::Hop(2), Grant::InMs(60_000)))
        .await
        .expect_err("outlives");
    match &aborted.error {
        RunError::Rejected {
            reason: RejectReason::LeaseOutlivesGrantor { bound, grantor, .. },
            ..
        } => {
            assert_eq!(bound, "sender_scope");
            assert_eq!(*grantor, Expiry::AtHop(2));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_lease_past_the_runs_hop_cap_is_rejected() {
    let runs = Arc::new(AtomicU32::new(0));
    // `first` works under no scope: its bound is the run's hop cap.
    let aborted = relay::Workflow::new((), runs.clone())
        .with_max_hops(3)
        .run(plan(Grant::Hop(100), Grant::Mine))
        .await
        .expect_err("past the cap");
    let reason = RejectReason::LeaseOutlivesGrantor {
        authority: "Relay".into(),
        lease: Expiry::AtHop(100),
        grantor: Expiry::AtHop(3),
        bound: "hop_cap".into(),
    };
    assert_rejected(&aborted, "first", "middle", reason);
    assert_eq!(runs.load(Ordering::SeqCst), 0, "`middle` never ran");
}

#[tokio::test]
async fn a_lease_past_the_runs_deadline_is_rejected() {
    let runs = Arc::new(AtomicU32::new(0));
    let aborted = relay::Workflow::new((), runs.clone())
        .with_deadline(std::time::Duration::from_secs(60))
        .run(plan(Grant::InMs(3_600_000), Grant::Mine))
        .await
        .expect_err("past the deadline");
    match &aborted.error {
        RunError::Rejected {
            from,
            to,
            reason: RejectReason::LeaseOutlivesGrantor { bound, lease, .. },
        } => {
            assert_eq!((*from, *to), ("first", "middle"));
            assert_eq!(bound, "deadline");
            assert!(matches!(lease, Expiry::AtUnixMs(_)));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0, "`middle` never ran");
    // Within the deadline: accepted (and `middle` passes it on as long as
    // its own).
    relay::Workflow::new((), runs.clone())
        .with_deadline(std::time::Duration::from_secs(60))
        .run(plan(Grant::InMs(30_000), Grant::Mine))
        .await
        .expect("within the deadline");
}

#[test]
fn expiries_compare_only_in_the_same_unit() {
    assert!(Expiry::AtHop(2).within(Expiry::AtHop(2)));
    assert!(!Expiry::AtHop(3).within(Expiry::AtHop(2)));
    assert!(Expiry::AtUnixMs(5).within(Expiry::AtUnixMs(6)));
    assert!(!Expiry::AtUnixMs(5).within(Expiry::AtHop(6)));
    assert!(!Expiry::AtHop(1).within(Expiry::AtUnixMs(6)));
    assert!(!Expiry::Never.within(Expiry::AtHop(6)));
    assert!(Expiry::Never.within(Expiry::Never));
    assert!(Expiry::AtHop(9).within(Expiry::Never));
}

#[workflow(entry = first, output = u32, open_ended = [Watch])]
pub mod watch {
    use super::*;

    /// A handoff whose lease may be open-ended: its authority says so.
    #[handoff]
    pub struct Watching {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Watch>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
    }

    #[agent(owns = [Begin], to = [watcher])]
    async fn first(_go: bool, cx: first::Context<'_>) -> Result<first::Next, Reject> {
        Ok(first::Next::Watcher(Watching {
            op: Operation::new("watch", ""),
            scope: cx.lease(authority::Watch).open_ended(),
            evidence: vec![],
            open: vec![],
            stop: StopWhen::at_hop(MAX_HOPS),
        }))
    }

    #[agent(owns = [Watch], to = [END])]
    async fn watcher(task: Watching, _cx: watcher::Context<'_>) -> Result<watcher::Next, Reject> {
        Ok(watcher::Next::End(u32::from(
            task.scope.expires == Expiry::Never,
        )))
    }
}

#[tokio::test]
async fn an_authority_declared_open_ended_takes_a_lease_that_never_expires() {
    use workflow_core::Authority;
    const { assert!(<watch::authority::Watch as Authority>::OPEN_ENDED) };
    const { assert!(!<watch::authority::Begin as Authority>::OPEN_ENDED) };
    let done = watch::Workflow::new((), ())
        .run(true)
        .await
        .expect("open-ended is declared");
    assert_eq!(done.output, 1);
}
