//! The writer/reviewer loop: the edge back to the writer carries its bound,
//! so the cycle is accepted and `MAX_HOPS` is computed from it.

use workflow_core::prelude::*;

#[workflow(entry = writer, output = String)]
mod review {
    use super::*;

    #[handoff]
    pub struct Draft {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Approve>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
        pub text: String,
    }

    #[handoff]
    pub struct Revision {
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
        pub text: String,
    }

    #[agent(owns = [Write], to = [reviewer])]
    async fn writer(task: Revision, cx: writer::Context<'_>) -> Result<writer::Next, Reject> {
        Ok(writer::Next::Reviewer(Draft {
            op: Operation::new("review", "review this draft"),
            scope: cx.lease(authority::Approve).as_long_as_mine(),
            evidence: vec![],
            open: vec![],
            stop: StopWhen::at_hop(cx.hop() + 8),
            text: format!("{}+", task.text),
        }))
    }

    #[agent(owns = [Approve], to = [writer(max = 2), END])]
    async fn reviewer(draft: Draft, cx: reviewer::Context<'_>) -> Result<reviewer::Next, Reject> {
        if draft.text.ends_with("++") {
            return Ok(reviewer::Next::End(draft.text));
        }
        Ok(reviewer::Next::Writer(Revision {
            op: Operation::new("revise", "make it longer"),
            scope: cx.lease(authority::Write).as_long_as_mine(),
            evidence: vec![Evidence::complete("reviewer", "too short")],
            open: vec![],
            stop: StopWhen::at_hop(cx.hop() + 8),
            text: draft.text,
        }))
    }
}

fn main() {
    // writer, reviewer, then at most two more rounds of both.
    assert_eq!(review::MAX_HOPS, 6);
    let first = review::Revision {
        op: Operation::new("write", "write something"),
        scope: Scope::new(review::authority::Write),
        evidence: vec![],
        open: vec![],
        stop: StopWhen::at_hop(10),
        text: "draft".to_owned(),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let done = rt
        .block_on(review::Workflow::new((), ()).run(first))
        .unwrap();
    assert_eq!(done.output, "draft++");
}
