//! Inner attributes and docs in the workflow module, and arguments whose
//! types have commas (`HashMap<String, u32>`).

#![deny(warnings)]

use std::collections::HashMap;

use workflow_core::prelude::*;

#[workflow(entry = count, output = HashMap<String, u32>, deps = HashMap<String, u32>)]
mod words {
    //! Counts words against a dictionary.
    #![allow(clippy::all)]

    use super::*;

    #[agent(to = [END])]
    #[pre(!text.is_empty(), "there is something to count")]
    async fn count(text: String, _cx: count::Context<'_>) -> Result<count::Next, Reject> {
        let mut counts = HashMap::new();
        for word in text.split_whitespace() {
            *counts.entry(word.to_owned()).or_insert(0) += 1;
        }
        Ok(count::Next::End(counts))
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let wf = words::Workflow::new((), HashMap::new());
    let counts = rt.block_on(wf.run("a b a".into())).unwrap().output;
    assert_eq!(counts["a"], 2);
}
