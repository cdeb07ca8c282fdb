//! Effects guarded before they happen: a write or destructive tool's guard
//! (`#[tool(guard = path)]`) is checked over its input and the run's root
//! before the tool acts; a refusal is a typed tool error
//! ([`ToolErrorKind::Refused`]), recorded with the turn's tool calls, and
//! the tool's body never runs.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use workflow_core::ToolErrorKind;
use workflow_core::prelude::*;
use workflow_core::tool::ToolOutcome;

/// What the tools did: rows written, tables dropped.
#[derive(Debug, Default)]
pub struct Store {
    pub rows: AtomicU32,
    pub dropped: AtomicU32,
}

#[workflow(entry = writer, output = u32, deps = Arc<Store>)]
pub mod db {
    use super::*;

    /// The run's limit.
    #[invariants]
    pub struct Root {
        /// At most this many rows written in one call.
        pub max_rows: u32,
    }

    /// Refuses a write of more rows than the root allows.
    fn within_limit(rows: &u32, root: &Root) -> Result<(), String> {
        if *rows > root.max_rows {
            return Err(format!("{rows} rows exceed the limit of {}", root.max_rows));
        }
        Ok(())
    }

    /// Refuses to drop any table but a scratch one.
    fn scratch_only(table: &String, _root: &Root) -> Result<(), String> {
        if table.starts_with("scratch_") {
            return Ok(());
        }
        Err(format!("`{table}` is not a scratch table"))
    }

    /// Writes rows.
    #[tool(needs = Write, effect = write, guard = within_limit)]
    async fn write_rows(rows: u32, store: &Arc<Store>) -> Result<u32, ToolError> {
        Ok(store.rows.fetch_add(rows, Ordering::SeqCst) + rows)
    }

    /// Drops a table.
    #[tool(needs = Write, effect = destructive, guard = scratch_only)]
    async fn drop_table(table: String, store: &Arc<Store>) -> Result<u32, ToolError> {
        let _ = table;
        Ok(store.dropped.fetch_add(1, Ordering::SeqCst) + 1)
    }

    /// Writes `rows` rows, or drops table `scratch_<rows>` / `users`.
    #[agent(owns = [Write], tools = [write_rows, drop_table], to = [END])]
    async fn writer(rows: u32, cx: writer::Context<'_>) -> Result<writer::Next, Reject> {
        let done = match rows {
            0 => cx.call(tools::drop_table, "users".to_owned()).await?,
            1 => cx.call(tools::drop_table, "scratch_1".to_owned()).await?,
            n => cx.call(tools::write_rows, n).await?,
        };
        Ok(writer::Next::End(done))
    }
}

fn db() -> (db::Workflow, Arc<Store>) {
    let store = Arc::new(Store::default());
    let root = db::Root { max_rows: 5 };
    (db::Workflow::new(root, store.clone()), store)
}

#[tokio::test]
async fn a_write_within_its_guard_runs() {
    let (wf, store) = db();
    let done = wf.run(4).await.unwrap();
    assert_eq!(done.output, 4);
    assert_eq!(store.rows.load(Ordering::SeqCst), 4);
}

#[tokio::test]
async fn a_write_its_guard_refuses_never_runs_and_is_recorded() {
    let (wf, store) = db();
    let aborted = wf.run(6).await.unwrap_err();
    match &aborted.error {
        RunError::ToolFailed { agent, error } => {
            assert_eq!(*agent, "writer");
            assert_eq!(error.kind, ToolErrorKind::Refused);
            assert_eq!(error.tool, "write_rows");
            assert!(
                error.message.contains("guard `within_limit`")
                    && error.message.contains("6 rows exceed the limit of 5"),
                "{}",
                error.message
            );
        }
        other => panic!("unexpected error: {other}"),
    }
    assert_eq!(store.rows.load(Ordering::SeqCst), 0, "the tool never ran");
    let last = aborted.transcript.len() - 1;
    let turn = aborted.transcript.turn(last).expect("the turn is recorded");
    assert_eq!(turn.tool_calls.len(), 1);
    assert_eq!(turn.tool_calls[0].tool, "write_rows");
    assert_eq!(turn.tool_calls[0].arguments, "6");
    assert_eq!(turn.tool_calls[0].attempts, 0, "refused before any attempt");
    assert!(matches!(
        &turn.tool_calls[0].outcome,
        ToolOutcome::Failed { error } if error.kind == ToolErrorKind::Refused
    ));
}

#[tokio::test]
async fn a_destructive_tool_is_guarded_too() {
    let (wf, store) = db();
    assert_eq!(wf.run(1).await.unwrap().output, 1);
    assert_eq!(store.dropped.load(Ordering::SeqCst), 1);
    let aborted = wf.run(0).await.unwrap_err();
    assert!(matches!(
        &aborted.error,
        RunError::ToolFailed { error, .. } if error.kind == ToolErrorKind::Refused
    ));
    assert_eq!(
        store.dropped.load(Ordering::SeqCst),
        1,
        "`users` was never dropped"
    );
}

#[test]
fn a_refusal_is_not_retried_and_reads_as_one() {
    assert!(!ToolErrorKind::Refused.is_transient());
    assert_eq!(ToolErrorKind::Refused.to_string(), "refused by its guard");
    let json = serde_json::to_value(ToolErrorKind::Refused).unwrap();
    assert_eq!(json, serde_json::json!("refused"));
}
