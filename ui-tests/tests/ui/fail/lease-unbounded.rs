//! A sender puts `cx.lease(..)` in a handoff without bounding it: a lease
//! is not a scope until it has an expiry, so the handoff does not compile.
//! Then it asks for an open-ended lease on an authority that does not
//! allow one.

use workflow_core::prelude::*;

#[workflow(entry = planner, output = String)]
mod wf {
    use super::*;

    #[handoff]
    pub struct Task {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Write>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
    }

    #[agent(owns = [Plan], to = [writer])]
    async fn planner(input: String, cx: planner::Context<'_>) -> Result<planner::Next, Reject> {
        if input.is_empty() {
            return Ok(planner::Next::Writer(Task {
                op: Operation::new("write", ""),
                scope: cx.lease(authority::Write),
                evidence: vec![],
                open: vec![],
                stop: StopWhen::at_hop(3),
            }));
        }
        Ok(planner::Next::Writer(Task {
            op: Operation::new("write", ""),
            scope: cx.lease(authority::Write).open_ended(),
            evidence: vec![],
            open: vec![],
            stop: StopWhen::at_hop(3),
        }))
    }

    #[agent(owns = [Write], to = [END])]
    async fn writer(_task: Task, _cx: writer::Context<'_>) -> Result<writer::Next, Reject> {
        Ok(writer::Next::End(String::new()))
    }
}

fn main() {}
