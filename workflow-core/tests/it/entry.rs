//! The entry agent's receipt checks its input's contract when the input is a
//! handoff, as every other receipt does.

use serde::{Deserialize, Serialize};
use workflow_core::prelude::*;

use crate::fixtures::{assert_rejected, rejection};

#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Out(pub u32);

#[workflow(entry = first, output = Out)]
pub mod flow {
    use super::*;

    #[handoff]
    pub struct Task {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Go>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
        pub n: u32,
    }

    #[agent(owns = [Go], to = [END])]
    async fn first(task: Task, _cx: first::Context<'_>) -> Result<first::Next, Reject> {
        Ok(first::Next::End(Out(task.n)))
    }
}

fn task(scope: Scope<flow::authority::Go>, stop: StopWhen) -> flow::Task {
    flow::Task {
        op: Operation::new("go", ""),
        scope,
        evidence: vec![],
        open: vec![],
        stop,
        n: 1,
    }
}

#[tokio::test]
async fn an_entry_handoff_with_an_expired_scope_is_rejected() {
    let wf = flow::Workflow::new((), ());
    let expired = Scope::new(flow::authority::Go).until_unix_ms(1);
    let aborted = wf
        .run(task(expired, StopWhen::at_hop(flow::MAX_HOPS)))
        .await
        .unwrap_err();
    let expired = RejectReason::ScopeExpired {
        authority: "Go".into(),
    };
    assert_rejected(&aborted, "START", "first", expired);
}

#[tokio::test]
async fn an_entry_handoff_whose_stop_condition_is_met_is_rejected() {
    let wf = flow::Workflow::new((), ());
    let aborted = wf
        .run(task(Scope::new(flow::authority::Go), StopWhen::at_hop(0)))
        .await
        .unwrap_err();
    assert!(
        matches!(
            rejection(&aborted.error).2,
            RejectReason::StopConditionMet { .. }
        ),
        "{:?}",
        aborted.error
    );
}

#[tokio::test]
async fn a_valid_entry_handoff_is_accepted() {
    let wf = flow::Workflow::new((), ());
    let done = wf
        .run(task(
            Scope::new(flow::authority::Go),
            StopWhen::at_hop(flow::MAX_HOPS),
        ))
        .await
        .unwrap();
    assert_eq!(done.output.0, 1);
    assert_eq!(done.transcript.receipt(0), Some(Receipt::Accepted));
}
