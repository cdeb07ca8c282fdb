//! Stops that stop: a stop part must hold at least one machine-checkable
//! condition (a hop, a deadline, a token budget) unless its handoff type
//! opts out with `#[handoff(unbounded_stop)]`; conditions stated in words
//! stay as documentation beside checkable ones.

use serde::{Deserialize, Serialize};
use workflow_core::prelude::*;

use crate::fixtures::assert_rejected;

#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Out(pub u32);

/// Which stop part the sender hands on.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum Stop {
    /// No condition at all.
    Empty,
    /// Only a condition in words.
    DescribedOnly,
    /// A hop bound beside a condition in words.
    Mixed,
}

fn stop_part(stop: Stop, hop: u32) -> StopWhen {
    match stop {
        Stop::Empty => StopWhen::any([]),
        Stop::DescribedOnly => StopWhen::any([]).or_when("the customer cancels"),
        Stop::Mixed => StopWhen::at_hop(hop + 3).or_when("the customer cancels"),
    }
}

#[workflow(entry = intake, output = Out)]
pub mod flow {
    use super::*;

    /// A handoff held to the rule.
    #[handoff]
    pub struct Task {
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
    }

    /// The short form, held to the same rule.
    #[handoff]
    pub struct Short {
        #[contract]
        pub contract: Contract<authority::Finish>,
    }

    /// Hands on one of the two handoffs, with the stop part asked for.
    #[agent(owns = [Intake], to = [worker, finisher])]
    async fn intake(
        (short, stop): (bool, Stop),
        cx: intake::Context<'_>,
    ) -> Result<intake::Next, Reject> {
        let stop = stop_part(stop, cx.hop());
        if short {
            let contract = cx
                .contract(authority::Finish, Operation::new("finish", ""))
                .stop(stop)
                .evidence([])
                .open([])
                .build();
            return Ok(intake::Next::Finisher(Short { contract }));
        }
        Ok(intake::Next::Worker(Task {
            op: Operation::new("work", ""),
            scope: cx.lease(authority::Work).as_long_as_mine(),
            evidence: vec![],
            open: vec![],
            stop,
        }))
    }

    #[agent(owns = [Work], to = [END])]
    async fn worker(_task: Task, _cx: worker::Context<'_>) -> Result<worker::Next, Reject> {
        Ok(worker::Next::End(Out(1)))
    }

    #[agent(owns = [Finish], to = [END])]
    async fn finisher(_task: Short, _cx: finisher::Context<'_>) -> Result<finisher::Next, Reject> {
        Ok(finisher::Next::End(Out(2)))
    }
}

#[workflow(entry = first, output = Out)]
pub mod open_ended {
    use super::*;

    /// A handoff whose type says, explicitly, that its receiver watches
    /// for its own end.
    #[handoff(unbounded_stop)]
    pub struct Watch {
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

    #[agent(owns = [Start], to = [watcher])]
    async fn first(stop: Stop, cx: first::Context<'_>) -> Result<first::Next, Reject> {
        Ok(first::Next::Watcher(Watch {
            op: Operation::new("watch", ""),
            scope: cx.lease(authority::Watch).as_long_as_mine(),
            evidence: vec![],
            open: vec![],
            stop: stop_part(stop, cx.hop()),
        }))
    }

    #[agent(owns = [Watch], to = [END])]
    async fn watcher(_task: Watch, _cx: watcher::Context<'_>) -> Result<watcher::Next, Reject> {
        Ok(watcher::Next::End(Out(3)))
    }
}

#[tokio::test]
async fn a_stop_part_with_nothing_checkable_is_rejected() {
    for stop in [Stop::Empty, Stop::DescribedOnly] {
        let wf = flow::Workflow::new((), ());
        let aborted = wf.run((false, stop)).await.unwrap_err();
        assert_rejected(&aborted, "intake", "worker", RejectReason::StopUnchecked);
    }
}

#[tokio::test]
async fn a_stop_part_with_nothing_checkable_is_recorded_in_audit_mode() {
    let wf = flow::Workflow::new((), ()).with_mode(workflow_core::Mode::Audit);
    let done = wf.run((false, Stop::DescribedOnly)).await.expect("audited");
    assert_eq!(
        done.transcript.receipt(1),
        Some(Receipt::Audited {
            reasons: vec![RejectReason::StopUnchecked]
        })
    );
}

#[tokio::test]
async fn a_short_contract_with_nothing_checkable_is_rejected() {
    let wf = flow::Workflow::new((), ());
    let aborted = wf.run((true, Stop::DescribedOnly)).await.unwrap_err();
    assert_rejected(&aborted, "intake", "finisher", RejectReason::StopUnchecked);
}

#[tokio::test]
async fn a_checkable_condition_beside_a_described_one_is_accepted() {
    let wf = flow::Workflow::new((), ());
    assert_eq!(wf.run((false, Stop::Mixed)).await.unwrap().output.0, 1);
    assert_eq!(wf.run((true, Stop::Mixed)).await.unwrap().output.0, 2);
}

#[tokio::test]
async fn a_handoff_type_that_opts_out_accepts_a_stop_part_in_words() {
    let wf = open_ended::Workflow::new((), ());
    for stop in [Stop::Empty, Stop::DescribedOnly, Stop::Mixed] {
        let done = wf.run(stop).await.unwrap();
        assert_eq!(done.output.0, 3);
        assert_eq!(done.transcript.receipt(1), Some(Receipt::Accepted));
    }
}

#[test]
fn the_reject_reason_is_coded_stop_unchecked() {
    let json = serde_json::to_value(RejectReason::StopUnchecked).unwrap();
    assert_eq!(json, serde_json::json!({"code": "stop_unchecked"}));
    assert!(
        RejectReason::StopUnchecked
            .to_string()
            .contains("machine-checkable")
    );
}
