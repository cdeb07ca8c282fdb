//! A contract built with `cx.contract(..)` must say its evidence and its
//! open questions before `build()` compiles (an empty list says "none").

use workflow_core::prelude::*;

#[workflow(entry = lead, output = u32)]
mod wf {
    use super::*;

    #[handoff]
    pub struct Task {
        #[contract]
        pub contract: Contract<authority::Work>,
    }

    #[agent(owns = [Plan], to = [worker])]
    async fn lead(_input: String, cx: lead::Context<'_>) -> Result<lead::Next, Reject> {
        Ok(lead::Next::Worker(Task {
            contract: cx.contract(authority::Work, Operation::new("go", "")).open([]).build(),
        }))
    }

    #[agent(owns = [Work], to = [END])]
    async fn worker(_task: Task, cx: worker::Context<'_>) -> Result<worker::Next, Reject> {
        let _no_open = cx
            .contract(authority::Work, Operation::new("go", ""))
            .evidence([])
            .build();
        Ok(worker::Next::End(1))
    }
}

fn main() {}
