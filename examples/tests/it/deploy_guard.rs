//! The deploy example's route limit, guarded before it happens: the guard
//! of `apply_plan` refuses a plan over the run's `max_changed_routes`
//! before any route is applied (the post-condition that checks the same
//! limit after the turn is kept as a second line).

use examples::deploy_workflow::{FakeCloud, deploy, staging_goal, staging_root};
use workflow_core::tool::ToolOutcome;
use workflow_core::{Receipt, RunError, ToolErrorKind};

#[tokio::test]
async fn a_plan_over_the_route_limit_is_refused_before_any_route_is_applied() {
    let root = deploy::Root {
        max_changed_routes: 1,
        ..staging_root()
    };
    let wf = deploy::Workflow::new(root, FakeCloud::one_page());
    let aborted = wf.run(staging_goal()).await.expect_err("refused");
    match &aborted.error {
        RunError::ToolFailed { agent, error } => {
            assert_eq!(*agent, "terraform");
            assert_eq!(error.tool, "apply_plan");
            assert_eq!(error.kind, ToolErrorKind::Refused);
            assert_eq!(
                error.message,
                "guard `within_route_limit` refused the call before the tool ran: the plan changes 2 routes, over the limit of 1"
            );
        }
        other => panic!("unexpected error: {other}"),
    }
    assert!(wf.deps().applied().is_empty(), "the tool never ran");
    // The refusal is recorded with the turn, as a failed call.
    let last = aborted.transcript.len() - 1;
    assert!(matches!(
        aborted.transcript.receipt(last),
        Some(Receipt::TurnFailed { .. })
    ));
    let turn = aborted.transcript.turn(last).expect("the turn is recorded");
    assert_eq!(turn.tool_calls.len(), 1);
    assert!(matches!(
        &turn.tool_calls[0].outcome,
        ToolOutcome::Failed { error } if error.kind == ToolErrorKind::Refused
    ));
}

#[tokio::test]
async fn a_plan_within_the_route_limit_is_applied() {
    let wf = deploy::Workflow::new(staging_root(), FakeCloud::one_page());
    let done = wf.run(staging_goal()).await.expect("applied");
    assert_eq!(done.output.changed_routes, 2);
    assert_eq!(wf.deps().applied().len(), 1);
}
