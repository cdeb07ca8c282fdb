//! The `workflow` command for the deploy workflow: every command of the
//! generic `workflow` binary, plus `replay` (with the deploy workflow's
//! agents, tool responses served from the record), `schema export` /
//! `schema check` (its published schemas, under `examples/schemas/deploy`)
//! and `canary` (its tools' canaries, recorded in
//! `examples/canaries/staging_deploy.json`).
//!
//! Run: `cargo run -p examples --bin workflow_deploy -- --ledger /tmp/staging_deploy.db replay`
//! or `cargo run -p examples --bin workflow_deploy -- canary examples/canaries/staging_deploy.json`
//! (`--live` with `OPENAI_BASE_URL` set: against that model server).

use std::sync::Arc;

use examples::deploy_workflow::{FakeCloud, deploy, staging_root};

fn main() -> std::process::ExitCode {
    // The runs are replayed under the root they were recorded with; the
    // cloud is never called (every tool response comes from the record).
    // A live canary run calls the fake cloud and asks the model server
    // `OPENAI_BASE_URL` names, when it is set.
    workflow_cli::main_with_canaries(|| {
        let executor = deploy::Workflow::new(staging_root(), FakeCloud::one_page());
        if std::env::var_os("OPENAI_BASE_URL").is_none() {
            return executor;
        }
        match workflow_openai::OpenAiModel::from_env() {
            Ok(model) => executor.with_model(Arc::new(model)),
            Err(e) => {
                eprintln!("workflow_deploy: no model from OPENAI_BASE_URL: {e}");
                executor
            }
        }
    })
}
