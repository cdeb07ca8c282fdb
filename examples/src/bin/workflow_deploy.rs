//! The `workflow` command for the deploy workflow: every command of the
//! generic `workflow` binary, plus `replay` (with the deploy workflow's
//! agents, tool responses served from the record) and `schema export` /
//! `schema check` (its published schemas, under `examples/schemas/deploy`).
//!
//! Run: `cargo run -p examples --bin workflow_deploy -- --ledger /tmp/staging_deploy.db replay`

use examples::deploy_workflow::{FakeCloud, deploy, staging_root};

fn main() -> std::process::ExitCode {
    // The runs are replayed under the root they were recorded with; the
    // cloud is never called (every tool response comes from the record).
    workflow_cli::main_for(|| deploy::Workflow::new(staging_root(), FakeCloud::one_page()))
}
