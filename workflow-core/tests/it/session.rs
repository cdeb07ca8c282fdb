//! Step-wise sessions: cancellation, the transcript after the end, and the
//! tool error behind an agent's refusal.

use std::time::Duration;

use workflow_core::prelude::*;

pub struct Deps;

#[workflow(entry = slow, output = u32, deps = Deps)]
pub mod flow {
    use super::*;

    /// Fails when asked for 0.
    #[tool(effect = read)]
    async fn check(n: u32, _deps: &Deps) -> Result<u32, ToolError> {
        if n == 0 {
            return Err(ToolError::new("check", "zero is not allowed"));
        }
        Ok(n)
    }

    #[agent(tools = [check], to = [END])]
    async fn slow(n: u32, cx: slow::Context<'_>) -> Result<slow::Next, Reject> {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let n = cx.call(tools::check, n).await?;
        Ok(slow::Next::End(n))
    }
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_step_leaves_an_interrupted_run_not_a_finished_one() {
    let wf = flow::Workflow::new((), Deps);
    let mut session = wf.start(3);
    let cancelled = tokio::time::timeout(Duration::from_millis(10), session.step()).await;
    assert!(cancelled.is_err(), "the step was cancelled by the timeout");
    assert_eq!(session.next_agent(), None);
    assert_eq!(session.step().await, Err(RunError::Interrupted));
    assert_eq!(
        session.step().await,
        Err(RunError::Interrupted),
        "it stays interrupted"
    );
}

#[tokio::test(start_paused = true)]
async fn the_transcript_is_there_after_the_end() {
    let wf = flow::Workflow::new((), Deps);
    let mut session = wf.start(3);
    assert_eq!(session.step().await, Ok(Step::Finished(3)));
    assert_eq!(session.step().await, Err(RunError::Finished));
    let transcript = session.into_transcript();
    assert_eq!(transcript.len(), 2, "START -> slow, slow -> END");
}

#[tokio::test(start_paused = true)]
async fn a_failed_tool_stops_the_run_with_its_error() {
    let wf = flow::Workflow::new((), Deps);
    let aborted = wf.run(0).await.unwrap_err();
    let RunError::ToolFailed { agent, error } = &aborted.error else {
        panic!("expected ToolFailed, got {:?}", aborted.error);
    };
    assert_eq!(*agent, "slow");
    assert_eq!(*error, ToolError::new("check", "zero is not allowed"));
    assert_eq!(
        aborted.error.to_string(),
        "agent `slow`: tool `check` failed: zero is not allowed"
    );
}

#[test]
fn a_refusal_from_a_tool_keeps_the_tool_error() {
    let error = Reject::from(ToolError::new("check", "zero is not allowed"));
    assert_eq!(
        error.tool_error(),
        Some(&ToolError::new("check", "zero is not allowed"))
    );
    assert_eq!(error.reason(), "tool `check` failed: zero is not allowed");
}
