//! `#[workflow]` goes on an inline module, not on a function.

use workflow_core::prelude::*;

#[workflow(entry = writer, output = String)]
async fn writer(topic: String) -> String {
    topic
}

fn main() {}
