//! `map(..)` without a bound, with a bound of 0, and with a bound past the
//! most a map may take: each possible item is a turn counted in `MAX_HOPS`.

use workflow_core::prelude::*;

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Done(pub bool);

#[workflow(entry = one, output = Done)]
mod wf {
    use super::*;

    #[handoff]
    pub struct Job1 {
        #[contract]
        pub contract: Contract<authority::W1>,
    }

    #[handoff]
    pub struct Job2 {
        #[contract]
        pub contract: Contract<authority::W2>,
    }

    #[handoff]
    pub struct Job3 {
        #[contract]
        pub contract: Contract<authority::W3>,
    }

    #[handoff]
    pub struct Next2 {
        #[contract]
        pub contract: Contract<authority::Two>,
    }

    #[handoff]
    pub struct Next3 {
        #[contract]
        pub contract: Contract<authority::Three>,
    }

    #[agent(owns = [One], to = [map(w1)])]
    async fn one(_input: String, _cx: one::Context<'_>) -> Result<one::Next, Reject> {
        todo!()
    }

    #[agent(owns = [W1], to = [j1])]
    async fn w1(_job: Job1, _cx: w1::Context<'_>) -> Result<w1::Next, Reject> {
        todo!()
    }

    #[agent(owns = [J1], join = [w1: [Done]], to = [two])]
    async fn j1(_all: j1::Joined, _cx: j1::Context<'_>) -> Result<j1::Next, Reject> {
        todo!()
    }

    #[agent(owns = [Two], to = [map(w2, max = 0)])]
    async fn two(_input: Next2, _cx: two::Context<'_>) -> Result<two::Next, Reject> {
        todo!()
    }

    #[agent(owns = [W2], to = [j2])]
    async fn w2(_job: Job2, _cx: w2::Context<'_>) -> Result<w2::Next, Reject> {
        todo!()
    }

    #[agent(owns = [J2], join = [w2: [Done]], to = [three])]
    async fn j2(_all: j2::Joined, _cx: j2::Context<'_>) -> Result<j2::Next, Reject> {
        todo!()
    }

    #[agent(owns = [Three], to = [map(w3, max = 5000)])]
    async fn three(_input: Next3, _cx: three::Context<'_>) -> Result<three::Next, Reject> {
        todo!()
    }

    #[agent(owns = [W3], to = [j3])]
    async fn w3(_job: Job3, _cx: w3::Context<'_>) -> Result<w3::Next, Reject> {
        todo!()
    }

    #[agent(owns = [J3], join = [w3: [Done]], to = [END])]
    async fn j3(_all: j3::Joined, _cx: j3::Context<'_>) -> Result<j3::Next, Reject> {
        todo!()
    }
}

fn main() {}
