//! A `max_hops` lower than the shortest run from the entry to `END`: every
//! run would be rejected at the hop cap. The shortest path counts, not the
//! loop: `review` needs 2 turns (writer -> reviewer -> END) and `chain` 3.

use workflow_core::prelude::*;

#[workflow(entry = writer, output = String, max_hops = 1)]
mod review {
    use super::*;

    #[handoff]
    pub struct Draft {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Review>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
    }

    #[handoff]
    pub struct Notes {
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
    async fn writer(_input: Notes, _cx: writer::Context<'_>) -> Result<writer::Next, Reject> {
        todo!()
    }

    #[agent(owns = [Review], to = [writer(max = 3), END])]
    async fn reviewer(_input: Draft, _cx: reviewer::Context<'_>) -> Result<reviewer::Next, Reject> {
        todo!()
    }
}

#[workflow(entry = a, output = String, max_hops = 2)]
mod chain {
    use super::*;

    #[handoff]
    pub struct ForB {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::B>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
    }

    #[handoff]
    pub struct ForC {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::C>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
    }

    #[agent(to = [b])]
    async fn a(_input: String, _cx: a::Context<'_>) -> Result<a::Next, Reject> {
        todo!()
    }

    #[agent(owns = [B], to = [c])]
    async fn b(_input: ForB, _cx: b::Context<'_>) -> Result<b::Next, Reject> {
        todo!()
    }

    #[agent(owns = [C], to = [END])]
    async fn c(_input: ForC, _cx: c::Context<'_>) -> Result<c::Next, Reject> {
        todo!()
    }
}

fn main() {}
