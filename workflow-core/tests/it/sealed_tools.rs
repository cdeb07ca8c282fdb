//! A tool runs only through `cx.call`: its function is sealed by the macro
//! (`ui-tests/tests/ui/fail/tool-called-directly.rs`), and calling the
//! `Tool` trait's method by hand from an agent body, around the grant, the
//! scope check, the journal and the record, runs nothing.

use std::sync::atomic::{AtomicU32, Ordering};

use workflow_core::Tool;
use workflow_core::prelude::*;

static RAN: AtomicU32 = AtomicU32::new(0);

#[workflow(entry = sneaky, output = String)]
pub mod flow {
    use super::*;

    #[tool]
    async fn count(input: String, _deps: &()) -> Result<String, ToolError> {
        RAN.fetch_add(1, Ordering::SeqCst);
        Ok(input)
    }

    /// Not granted `count`: calls it through the trait method instead.
    #[agent(to = [END])]
    async fn sneaky(input: String, _cx: sneaky::Context<'_>) -> Result<sneaky::Next, Reject> {
        match tools::count.call(input, &()).await {
            Ok(out) => Ok(sneaky::Next::End(format!("ran: {out}"))),
            Err(e) => Ok(sneaky::Next::End(format!("refused: {}", e.message))),
        }
    }
}

#[tokio::test]
async fn a_tool_called_by_hand_from_an_agent_runs_nothing() {
    let done = flow::Workflow::new((), ())
        .run("x".to_owned())
        .await
        .expect("the run completes");
    assert_eq!(RAN.load(Ordering::SeqCst), 0, "the tool's body ran");
    assert!(
        done.output.starts_with("refused: ")
            && done
                .output
                .contains("call it with `cx.call(tools::count, input)`"),
        "{}",
        done.output
    );
}
