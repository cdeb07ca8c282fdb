//! `writer` hands `reviewer` a `Revision`, but `reviewer` takes a `Draft`: the
//! `Next::Reviewer` variant carries exactly the receiver's input type.

use workflow_core::prelude::*;

#[workflow(entry = writer, output = String)]
mod wf {
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
    }

    #[agent(owns = [Write], to = [reviewer])]
    async fn writer(_task: Revision, cx: writer::Context<'_>) -> Result<writer::Next, Reject> {
        Ok(writer::Next::Reviewer(Revision {
            op: Operation::new("review", "review this"),
            scope: cx.lease(authority::Write).as_long_as_mine(),
            evidence: vec![],
            open: vec![],
            stop: StopWhen::at_hop(cx.hop() + 8),
        }))
    }

    #[agent(owns = [Approve], to = [END])]
    async fn reviewer(_input: Draft, _cx: reviewer::Context<'_>) -> Result<reviewer::Next, Reject> {
        todo!()
    }
}

fn main() {}
