//! The model-picks-the-tools example: the scripted model's loop completes
//! with its resolution, its refused call is recorded and never made, and
//! exactly one rollback happened.

use std::sync::Arc;

use examples::model_tools::{Ops, alert, incident, resolution, scripted};
use workflow_core::llm::ModelErrorKind;

#[tokio::test]
async fn the_model_looks_up_is_refused_an_unknown_tool_rolls_back_once_and_answers() {
    let model = Arc::new(scripted());
    let wf = incident::Workflow::new((), Ops::default()).with_model(model.clone());
    let done = wf.run(alert()).await.expect("completes");
    assert_eq!(done.output, resolution());
    assert_eq!(model.remaining(), 0, "every scripted step was asked");
    let rollbacks = wf.deps().rollbacks.lock().unwrap();
    assert_eq!(rollbacks.len(), 1);
    assert_eq!(rollbacks[0].to_release, "r41");

    let (_, turn) = done
        .transcript
        .turns()
        .next()
        .expect("the responder's turn");
    let call = &turn.model_calls[0];
    assert_eq!(
        call.tools,
        ["recent_deploys", "error_rate", "service_owner", "rollback"]
    );
    assert_eq!(call.attempts.len(), 4);
    let refused = &call.attempts[1].answers[0];
    assert_eq!(refused.call, None);
    assert_eq!(
        refused.error.as_ref().map(|e| e.kind),
        Some(ModelErrorKind::ToolNotOffered)
    );
    let made: Vec<_> = turn.tool_calls.iter().map(|c| c.tool.to_string()).collect();
    assert_eq!(made, ["error_rate", "recent_deploys", "rollback"]);
}

#[tokio::test]
async fn a_rollback_to_a_release_the_service_never_ran_is_refused_by_its_guard() {
    use workflow_core::llm::{ScriptedModel, ToolCallRequest};
    let model = Arc::new(ScriptedModel::new().call_tools([ToolCallRequest::new(
        "c",
        "rollback",
        r#"{"service":"payments-api","to_release":"r1"}"#,
    )]));
    let wf = incident::Workflow::new((), Ops::default()).with_model(model);
    let aborted = wf.run(alert()).await.unwrap_err();
    assert!(wf.deps().rollbacks.lock().unwrap().is_empty(), "never made");
    assert!(
        aborted
            .error
            .to_string()
            .contains("is not a recent release"),
        "{}",
        aborted.error
    );
}
