//! `open_ended = [..]` names an authority no agent owns (a typo of
//! `Watch`): reported on the name.

use workflow_core::prelude::*;

#[workflow(entry = watcher, output = String, open_ended = [Wach])]
mod wf {
    use super::*;

    #[agent(owns = [Watch], to = [END])]
    async fn watcher(_input: String, _cx: watcher::Context<'_>) -> Result<watcher::Next, Reject> {
        Ok(watcher::Next::End(String::new()))
    }
}

fn main() {}
