//! The main workflow under real Rego policies (`workflow-rego`): a deny is
//! a rejection carrying the policy's messages, routed as the receiver
//! declares (terraform escalates), and nothing is applied.

use std::sync::Arc;

use examples::deploy_workflow::{FakeCloud, deploy, staging_goal, staging_root};
use workflow_core::{Decision, Escalation, RejectReason, RunError};
use workflow_rego::Policy;

const MUTATION_LIMITS: &str =
    include_str!("../../../workflow-rego/tests/policies/mutation_limits.rego");

fn gate() -> Arc<Policy> {
    Arc::new(Policy::from_rego("mutation_limits.rego", MUTATION_LIMITS).expect("compiles"))
}

#[tokio::test]
async fn a_plan_over_the_mutation_limit_is_denied_at_terraforms_receipt() {
    let root = deploy::Root {
        max_changed_routes: 1,
        ..staging_root()
    };
    let wf = deploy::Workflow::new(root, FakeCloud::one_page()).with_gate(gate());
    let aborted = wf.run(staging_goal()).await.expect_err("denied");
    match &aborted.error {
        RunError::Suspended {
            agent: "terraform",
            reason:
                Escalation::Rejected {
                    reason: RejectReason::Denied { gate, messages },
                },
        } => {
            assert_eq!(gate, "policy mutation_limits.rego");
            assert_eq!(
                messages,
                &["the plan changes 2 routes, over the limit of 1"]
            );
        }
        other => panic!("unexpected error: {other}"),
    }
    assert!(wf.deps().applied().is_empty(), "nothing was applied");

    // A person edits the plan down to the limit: checked again, allowed.
    let suspension = aborted.suspension().expect("suspended");
    let mut plan: serde_json::Value =
        serde_json::from_str(&suspension.payload_json().expect("reads")).expect("JSON");
    plan["routes"] = 1.into();
    let done = wf
        .decide(
            &suspension,
            Decision::Edit {
                by: "ops".into(),
                payload: plan,
            },
        )
        .await
        .expect("the edited plan passes the policy");
    assert_eq!(done.output.changed_routes, 1);
    assert_eq!(wf.deps().applied(), ["vpc-2stag: 1 routes"]);
}

#[tokio::test]
async fn within_the_limit_every_transfer_passes_the_policy() {
    let wf = deploy::Workflow::new(staging_root(), FakeCloud::one_page()).with_gate(gate());
    let done = wf.run(staging_goal()).await.expect("allowed");
    assert_eq!(done.transcript.len(), 4);
}

#[tokio::test]
async fn a_policy_that_cannot_decide_denies() {
    // `count` of a number: an evaluation error, which must not allow.
    let broken = Policy::from_rego(
        "broken.rego",
        "package workflow\n\ndeny contains msg if {\n\tcount(input.hop) > 0\n\tmsg := \"never\"\n}\n",
    )
    .expect("compiles");
    let wf =
        deploy::Workflow::new(staging_root(), FakeCloud::one_page()).with_gate(Arc::new(broken));
    let aborted = wf.run(staging_goal()).await.expect_err("fails closed");
    match &aborted.error {
        RunError::Rejected {
            to: "planner",
            reason: RejectReason::Denied { messages, .. },
            ..
        } => assert!(
            messages[0].starts_with("the policy could not decide"),
            "{messages:?}"
        ),
        other => panic!("unexpected error: {other}"),
    }
}
