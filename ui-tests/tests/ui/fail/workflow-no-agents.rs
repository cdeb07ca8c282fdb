//! A workflow module without any `#[agent]`.

use workflow_core::prelude::*;

#[workflow(entry = writer, output = String)]
mod wf {
    pub fn writer() {}
}

fn main() {}
