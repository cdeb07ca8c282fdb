//! Loop bounds so large that the bound on agent turns of a run does not fit
//! in a `u32`.

use workflow_core::prelude::*;

#[workflow(entry = fixer, output = String)]
mod wf {
    use super::*;

    #[handoff]
    pub struct Fix {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Repair>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
    }

    #[agent(owns = [Repair], to = [fixer(max = 4294967295), END])]
    async fn fixer(_input: Fix, _cx: fixer::Context<'_>) -> Result<fixer::Next, Reject> {
        todo!()
    }
}

fn main() {}
