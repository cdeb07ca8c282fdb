//! A handoff field pinned to a root invariant (`#[pin(root_field)]`):
//! compared with `==` on the typed values at the receipt, whatever the
//! field is called in the payload.

use workflow_core::prelude::*;

use crate::fixtures::assert_rejected;

#[workflow(entry = intake, output = String)]
pub mod desk {
    use super::*;

    /// The one tenant of a run.
    #[invariants]
    pub struct Root {
        /// The tenant.
        pub tenant: String,
    }

    /// Intake -> worker: the ticket's owner must be the pinned tenant.
    #[handoff]
    pub struct Task {
        /// Work.
        #[operation]
        pub op: Operation,
        /// Under the worker's authority.
        #[authority]
        pub scope: Scope<authority::Work>,
        /// None.
        #[evidence]
        pub evidence: Vec<Evidence>,
        /// None.
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        /// None.
        #[stop]
        pub stop: StopWhen,
        /// Named otherwise than the root field, and renamed on the wire: a
        /// check by JSON name would not see it.
        #[pin(tenant)]
        #[serde(rename = "customer")]
        pub owner: String,
    }

    /// Hands the ticket's owner on as it came.
    #[agent(to = [worker])]
    async fn intake(owner: String, cx: intake::Context<'_>) -> Result<intake::Next, Reject> {
        Ok(intake::Next::Worker(Task {
            op: Operation::new("work", "the ticket"),
            scope: cx.lease(authority::Work).as_long_as_mine(),
            evidence: vec![],
            open: vec![],
            stop: StopWhen::at_hop(cx.hop() + 8),
            owner,
        }))
    }

    #[agent(owns = [Work], to = [END])]
    async fn worker(task: Task, _cx: worker::Context<'_>) -> Result<worker::Next, Reject> {
        Ok(worker::Next::End(task.owner))
    }
}

fn desk() -> desk::Workflow {
    let root = desk::Root {
        tenant: "acme".into(),
    };
    desk::Workflow::new(root, ())
}

#[tokio::test]
async fn a_pinned_field_equal_to_its_root_invariant_is_accepted() {
    let done = desk().run("acme".to_owned()).await.expect("completes");
    assert_eq!(done.output, "acme");
}

#[tokio::test]
async fn a_pinned_field_that_differs_is_rejected_before_the_body_runs() {
    let aborted = desk()
        .run("globex".to_owned())
        .await
        .expect_err("wrong tenant");
    // The rejection is the last record: the worker's body never ran.
    let reason = RejectReason::InvariantBroken {
        invariant: "pin(Task.owner = tenant)".into(),
        message: "`Task.owner` is \"globex\" but the pinned `tenant` is \"acme\"".into(),
    };
    assert_rejected(&aborted, "intake", "worker", reason);
}
