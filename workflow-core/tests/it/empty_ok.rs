//! An empty result that is a valid answer: a tool that returns
//! `EmptyOk<..>` hands the agent "nothing found", recorded like any
//! result; the same tool without it still fails fast.

use workflow_core::prelude::*;
use workflow_core::tool::ToolOutcome;

#[workflow(entry = searcher, output = u32)]
pub mod lookup {
    use super::*;

    /// Incidents on the status page: none is an answer.
    #[tool(effect = read)]
    async fn incidents(service: String, _deps: &()) -> Result<EmptyOk<Vec<String>>, ToolError> {
        let _ = service;
        Ok(EmptyOk(vec![]))
    }

    /// The same search, fail-fast as by default.
    #[tool(effect = read)]
    async fn incidents_strict(service: String, _deps: &()) -> Result<Vec<String>, ToolError> {
        let _ = service;
        Ok(vec![])
    }

    /// Counts the incidents of the service, with the tool the input names.
    #[agent(tools = [incidents, incidents_strict], to = [END])]
    async fn searcher(tool: String, cx: searcher::Context<'_>) -> Result<searcher::Next, Reject> {
        let found = if tool == "strict" {
            cx.call(tools::incidents_strict, "api".into()).await?
        } else {
            cx.call(tools::incidents, "api".into()).await?.into_inner()
        };
        Ok(searcher::Next::End(found.len() as u32))
    }
}

#[tokio::test]
async fn an_empty_result_declared_valid_is_the_answer_and_is_recorded() {
    let done = lookup::Workflow::new((), ())
        .run("lenient".to_owned())
        .await
        .expect("no incidents is an answer");
    assert_eq!(done.output, 0);
    let (_, turn) = done.transcript.turns().next().expect("the turn");
    assert_eq!(turn.tool_calls.len(), 1);
    assert_eq!(turn.tool_calls[0].tool, "incidents");
    match &turn.tool_calls[0].outcome {
        // On the wire `EmptyOk<Vec<_>>` is the list itself.
        ToolOutcome::Ok { result, .. } => assert_eq!(result, "[]"),
        other => panic!("unexpected outcome {other:?}"),
    }
}

#[tokio::test]
async fn the_same_empty_result_without_the_declaration_still_fails_fast() {
    let aborted = lookup::Workflow::new((), ())
        .run("strict".to_owned())
        .await
        .expect_err("empty is refused by default");
    match &aborted.error {
        RunError::ToolFailed { error, .. } => {
            assert_eq!(error.kind, ToolErrorKind::Empty);
            // The error says the way out, where the user first meets it.
            assert!(error.message.contains("EmptyOk"), "{}", error.message);
        }
        other => panic!("unexpected error: {other}"),
    }
}

#[test]
fn empty_ok_accepts_empty_but_not_partial_or_failure_status() {
    struct Page(Vec<u32>, bool);
    impl FailFast for Page {
        fn fail_fast(&self) -> Result<(), Unusable> {
            if self.1 {
                return Err(Unusable::Partial("more pages".into()));
            }
            self.0.fail_fast()
        }
    }
    assert!(EmptyOk(Page(vec![], false)).fail_fast().is_ok());
    assert!(matches!(
        EmptyOk(Page(vec![], true)).fail_fast(),
        Err(Unusable::Partial(_))
    ));
    assert!(EmptyOk(None::<Vec<u32>>).fail_fast().is_ok());
    assert!(EmptyOk(Some(vec![1])).fail_fast().is_ok());
    // Its schema is the inner type's.
    assert_eq!(
        workflow_core::schema::root_schema::<EmptyOk<Vec<String>>>()
            .get("type")
            .cloned(),
        Some(serde_json::json!("array"))
    );
}
