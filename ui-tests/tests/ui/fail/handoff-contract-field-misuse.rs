//! The `#[contract]` field holds the five parts: it is the only contract
//! field of its handoff, marked once, bare, never an `Option`, and of a
//! type that is a `Contract<A>`.

use workflow_core::prelude::*;

#[workflow(entry = lead, output = u32)]
mod wf {
    use super::*;

    #[handoff]
    pub struct BesideAPart {
        #[contract]
        pub contract: Contract<authority::Work>,
        #[operation]
        pub op: Operation,
    }

    #[handoff]
    pub struct Twice {
        #[contract]
        pub contract: Contract<authority::Work>,
        #[contract]
        pub again: Contract<authority::Work>,
    }

    #[handoff]
    pub struct SameField {
        #[contract]
        #[stop]
        pub contract: Contract<authority::Work>,
    }

    #[handoff]
    pub struct WithArguments {
        #[contract(short)]
        pub contract: Contract<authority::Work>,
    }

    #[handoff]
    pub struct Optional {
        #[contract]
        pub contract: Option<Contract<authority::Work>>,
    }

    #[handoff]
    pub struct Dropped {
        #[contract]
        #[serde(default)]
        pub contract: Contract<authority::Work>,
    }

    #[handoff]
    pub struct WrongType {
        #[contract]
        pub contract: StopWhen,
    }

    #[agent(owns = [Plan], to = [worker])]
    async fn lead(_input: String, _cx: lead::Context<'_>) -> Result<lead::Next, Reject> {
        todo!()
    }

    #[agent(owns = [Work], to = [END])]
    async fn worker(_task: WrongType, _cx: worker::Context<'_>) -> Result<worker::Next, Reject> {
        todo!()
    }
}

fn main() {}
