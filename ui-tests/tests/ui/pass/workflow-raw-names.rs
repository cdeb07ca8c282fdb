//! An agent with a raw identifier (`r#type`) is named `type` in records, the
//! manifest and the diagram.

use workflow_core::prelude::*;

#[workflow(entry = r#type, output = String)]
mod wf {
    use super::*;

    #[agent(to = [END])]
    async fn r#type(text: String, _cx: r#type::Context<'_>) -> Result<r#type::Next, Reject> {
        Ok(r#type::Next::End(text))
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let done = rt.block_on(wf::Workflow::new((), ()).run("x".into())).unwrap();
    let records = done.transcript.records().unwrap();
    assert_eq!(records[0].to.to_string(), "type");
    assert_eq!(wf::Workflow::manifest().entry, "type");
    assert!(wf::Workflow::mermaid().contains("agent_type[type]"));
}
