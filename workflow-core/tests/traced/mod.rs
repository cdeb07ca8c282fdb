//! The workflow the OpenTelemetry tests run (from `telemetry.rs`, with a
//! post-condition and a tool that can fail): planner hands a task to doer,
//! doer calls `double` and ends the run.

use std::sync::Arc;

use workflow_core::ledger::{Ledger, LedgerRecord, MemoryLedger};
use workflow_core::prelude::*;

#[derive(Debug, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Out(pub u32);

#[workflow(entry = planner, output = Out)]
pub mod flow {
    use super::*;

    #[handoff]
    pub struct Task {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Do>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
        pub n: u32,
    }

    #[tool(effect = read)]
    async fn double(n: u32, _deps: &()) -> Result<u32, ToolError> {
        if n == 7 {
            return Err(ToolError::new("double", "seven is not doubled"));
        }
        Ok(n * 2)
    }

    #[agent(owns = [Plan], to = [doer])]
    async fn planner(n: u32, cx: planner::Context<'_>) -> Result<planner::Next, Reject> {
        Ok(planner::Next::Doer(Task {
            op: Operation::new("do", ""),
            scope: cx.lease(authority::Do).as_long_as_mine(),
            evidence: vec![],
            open: vec![],
            stop: StopWhen::at_hop(cx.hop() + 8),
            n,
        }))
    }

    #[agent(owns = [Do], tools = [double], to = [END])]
    #[pre(task.n < 10, "small numbers only")]
    #[post(!matches!(out, doer::Next::End(Out(12))), "never twelve")]
    async fn doer(task: Task, cx: doer::Context<'_>) -> Result<doer::Next, Reject> {
        Ok(doer::Next::End(Out(cx.call(tools::double, task.n).await?)))
    }
}

/// Runs the flow on `n` with a ledger attached, on a current-thread
/// runtime: the run id and the ledger's records.
pub fn run(n: u32) -> (u64, Vec<LedgerRecord>) {
    run_in(n, workflow_core::Mode::Enforce)
}

/// [`run`] by an executor in `mode`.
pub fn run_in(n: u32, mode: workflow_core::Mode) -> (u64, Vec<LedgerRecord>) {
    let ledger = Arc::new(MemoryLedger::new());
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    let wf = flow::Workflow::new((), ())
        .with_ledger(ledger.clone())
        .with_mode(mode);
    let run_id = match rt.block_on(wf.run(n)) {
        Ok(done) => done.transcript.run_id(),
        Err(aborted) => aborted.transcript.run_id(),
    };
    let records = ledger.records(run_id).expect("the records");
    assert_eq!(ledger.verify_run(run_id), Ok(()), "the records verify");
    (run_id, records)
}
