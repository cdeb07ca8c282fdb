//! Tools (one that needs an authority, one that does not), pinned
//! invariants, pre- and post-conditions, a timeout and a deps type.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use workflow_core::prelude::*;

/// The work to do.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Job {
    pub rows: u32,
}

/// What was done.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Done {
    pub rows: u32,
}

/// What the tools work on.
pub struct Db {
    pub limit: u32,
}

#[workflow(entry = planner, output = Done, deps = Db, max_hops = 10)]
mod jobs {
    use super::*;

    #[invariants]
    pub struct Root {
        pub max_rows: u32,
    }

    #[handoff]
    pub struct Write {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Mutate>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
        pub rows: u32,
    }

    #[tool(effect = read)]
    async fn limit(_query: (), db: &Db) -> Result<u32, ToolError> {
        Ok(db.limit)
    }

    #[tool(needs = Mutate, effect = read)]
    async fn update(rows: u32, _db: &Db) -> Result<u32, ToolError> {
        Ok(rows)
    }

    #[agent(owns = [Plan], tools = [limit], to = [writer])]
    #[pre(job.rows > 0, "there must be something to do")]
    async fn planner(job: Job, cx: planner::Context<'_>) -> Result<planner::Next, Reject> {
        let limit = cx.call(tools::limit, ()).await?;
        Ok(planner::Next::Writer(Write {
            op: Operation::new("update", "update the rows"),
            scope: cx.lease(authority::Mutate).until_hop(cx.hop() + 1),
            evidence: vec![cx.evidence_from(tools::limit, format!("limit is {limit}"))?],
            open: vec![],
            stop: StopWhen::at_hop(cx.hop() + 2),
            rows: job.rows.min(limit),
        }))
    }

    #[agent(owns = [Mutate], tools = [update], to = [END], timeout_ms = 1000)]
    #[pre(task.rows <= cx.root().max_rows, "at most `max_rows` rows")]
    #[post(matches!(out, writer::Next::End(d) if d.rows == task_rows(cx)), "all rows done")]
    async fn writer(task: Write, cx: writer::Context<'_>) -> Result<writer::Next, Reject> {
        let rows = cx.call(tools::update, task.rows).await?;
        Ok(writer::Next::End(Done { rows }))
    }

    fn task_rows(cx: &writer::Context<'_>) -> u32 {
        cx.root().max_rows.min(3)
    }
}

fn main() {
    assert_eq!(jobs::MAX_HOPS, 2);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let wf = jobs::Workflow::new(jobs::Root { max_rows: 5 }, Db { limit: 3 });
    let done = rt.block_on(wf.run(Job { rows: 7 })).unwrap();
    assert_eq!(done.output, Done { rows: 3 });
    // The pre-condition rejects an empty job at the receipt.
    assert!(rt.block_on(wf.run(Job { rows: 0 })).is_err());
}
