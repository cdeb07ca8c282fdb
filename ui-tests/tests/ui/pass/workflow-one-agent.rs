//! The smallest workflow: one agent that ends the run.

use workflow_core::prelude::*;

#[workflow(entry = echo, output = String)]
mod minimal {
    use super::*;

    #[agent(to = [END])]
    async fn echo(text: String, _cx: echo::Context<'_>) -> Result<echo::Next, Reject> {
        Ok(echo::Next::End(text))
    }
}

fn main() {
    assert_eq!(minimal::MAX_HOPS, 1);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let done = rt
        .block_on(minimal::Workflow::new((), ()).run("hi".to_owned()))
        .unwrap();
    assert_eq!(done.output, "hi");
}
