//! Two agents whose names give the same `Next`/`State` variant (`FetchPage`).

use workflow_core::prelude::*;

#[workflow(entry = fetch_page, output = String)]
mod wf {
    use super::*;

    #[handoff]
    pub struct Page {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Fetch>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
    }

    #[agent(to = [fetch_page_])]
    async fn fetch_page(
        _input: String,
        _cx: fetch_page::Context<'_>,
    ) -> Result<fetch_page::Next, Reject> {
        todo!()
    }

    #[agent(owns = [Fetch], to = [END])]
    async fn fetch_page_(
        _input: Page,
        _cx: fetch_page_::Context<'_>,
    ) -> Result<fetch_page_::Next, Reject> {
        todo!()
    }
}

fn main() {}
