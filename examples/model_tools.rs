//! A model that picks the tools: incident response where the responder's
//! model chooses among three granted lookups and one write tool (a
//! rollback), held to every check of `cx.call`, in a bounded loop.
//!
//! Run offline (a scripted model, the default):
//!
//! ```text
//! cargo run -p examples --example model_tools
//! ```
//!
//! Run against any OpenAI-compatible server with tool calling: set
//! `OPENAI_BASE_URL` (and `OPENAI_MODEL`, `OPENAI_API_KEY` if the server
//! wants one), as for `model_triage`:
//!
//! ```text
//! OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_MODEL=qwen2.5:7b \
//!     cargo run -p examples --example model_tools
//! ```

use std::sync::Arc;

use examples::model_tools::{Ops, alert, incident, scripted};
use workflow_core::llm::{Model, ModelOutcome};
use workflow_core::prelude::*;
use workflow_core::tool::ToolOutcome;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let model: Arc<dyn Model> = match std::env::var("OPENAI_BASE_URL") {
        Ok(url) if !url.trim().is_empty() => match workflow_openai::OpenAiModel::from_env() {
            Ok(model) => {
                println!("model: {} at {url}", model.config().model);
                Arc::new(model)
            }
            Err(e) => {
                eprintln!("cannot use OPENAI_BASE_URL: {e}");
                std::process::exit(2);
            }
        },
        _ => {
            println!("model: scripted (set OPENAI_BASE_URL to use a server)");
            Arc::new(scripted())
        }
    };
    let wf = incident::Workflow::new((), Ops::default())
        .with_model(model)
        .with_budget(Budget::default().max_tokens(40_000));
    let (transcript, outcome) = match wf.run(alert()).await {
        Ok(done) => (done.transcript, Ok(done.output)),
        Err(aborted) => (aborted.transcript, Err(aborted.error)),
    };
    print!("{transcript}");
    for (_, turn) in transcript.turns() {
        for call in &turn.model_calls {
            println!(
                "{}: {} offered [{}], {} step(s), {} tokens in / {} out",
                turn.agent,
                call.model,
                call.tools.join(", "),
                call.attempts.len(),
                call.usage.input_tokens,
                call.usage.output_tokens
            );
            for (n, step) in call.attempts.iter().enumerate() {
                for (asked, got) in step.tool_calls.iter().zip(&step.answers) {
                    let said = match (&got.error, got.call) {
                        (Some(e), _) => format!("REFUSED ({}): {}", e.kind, e.message),
                        (None, Some(index)) => {
                            match turn.tool_calls.iter().find(|c| c.index == index) {
                                Some(c) => match &c.outcome {
                                    ToolOutcome::Ok { result, .. } => format!("-> {result}"),
                                    ToolOutcome::Failed { error } => format!("FAILED: {error}"),
                                },
                                None => "made".to_owned(),
                            }
                        }
                        (None, None) => String::new(),
                    };
                    println!(
                        "  step {}: {}({}) {said}",
                        n + 1,
                        asked.name,
                        asked.arguments
                    );
                }
                if step.tool_calls.is_empty() {
                    println!("  step {}: answers", n + 1);
                }
            }
            if let ModelOutcome::Failed { error } = &call.outcome {
                println!("  failed: {error}");
            }
        }
    }
    println!(
        "rollbacks made: {}",
        wf.deps().rollbacks.lock().map_or(0, |r| r.len())
    );
    match outcome {
        Ok(resolution) => {
            println!(
                "resolution for {}: {}",
                resolution.service, resolution.cause
            );
            if let Some(release) = &resolution.rolled_back_to {
                println!("  rolled back to {release}");
            }
            println!("  page on-call: {}", resolution.page_oncall);
        }
        Err(error) => {
            println!("stopped: {error}");
            std::process::exit(1);
        }
    }
}
