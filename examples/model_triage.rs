//! Agents that call a model: incident triage, each handoff written by the
//! model and held to its JSON Schema at the seam.
//!
//! Run offline (a scripted model, the default):
//!
//! ```text
//! cargo run -p examples --example model_triage
//! ```
//!
//! Run against any OpenAI-compatible server: set `OPENAI_BASE_URL` (and
//! `OPENAI_MODEL`, `OPENAI_API_KEY` if the server wants one):
//!
//! ```text
//! # Ollama (`ollama serve`, then `ollama pull qwen2.5:7b`)
//! OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_MODEL=qwen2.5:7b \
//!     cargo run -p examples --example model_triage
//! # llama.cpp (`llama-server -m model.gguf --port 8080`)
//! OPENAI_BASE_URL=http://localhost:8080/v1 cargo run -p examples --example model_triage
//! # OpenAI itself (https needs the `tls` feature)
//! OPENAI_BASE_URL=https://api.openai.com/v1 OPENAI_API_KEY=sk-... \
//!     cargo run -p examples --features tls --example model_triage
//! ```

use std::sync::Arc;

use examples::model_triage::{incident, scripted, triage};
use workflow_core::llm::{Model, ModelOutcome};
use workflow_core::prelude::*;

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
    let wf = triage::Workflow::new((), ())
        .with_model(model)
        .with_budget(Budget::default().max_tokens(20_000));
    let (transcript, outcome) = match wf.run(incident()).await {
        Ok(done) => (done.transcript, Ok(done.output)),
        Err(aborted) => (aborted.transcript, Err(aborted.error)),
    };
    print!("{transcript}");
    let mut spent = Usage::default();
    for (_, turn) in transcript.turns() {
        for call in &turn.model_calls {
            println!(
                "{}: {} -> {} in {} attempt(s), {} tokens in / {} out",
                turn.agent,
                call.model,
                call.schema.as_deref().unwrap_or("text"),
                call.attempts.len(),
                call.usage.input_tokens,
                call.usage.output_tokens
            );
            let last = call.attempts.len();
            for (i, attempt) in call.attempts.iter().enumerate() {
                match &attempt.error {
                    Some(error) if i + 1 < last => {
                        println!("  attempt {} sent back: {error}", i + 1)
                    }
                    _ => {}
                }
            }
            if let ModelOutcome::Failed { error } = &call.outcome {
                println!("  failed: {error}");
            }
        }
        spent.input_tokens += turn.usage.input_tokens;
        spent.output_tokens += turn.usage.output_tokens;
    }
    println!("budget: {} of 20000 tokens spent", spent.total_tokens());
    for question in transcript.unresolved() {
        println!("left open, for you: {question}");
    }
    match outcome {
        Ok(runbook) => {
            println!("runbook for {}:", runbook.service);
            for step in &runbook.steps {
                println!("  - {step}");
            }
            println!("  page on-call: {}", runbook.page_oncall);
        }
        Err(error) => {
            println!("stopped: {error}");
            std::process::exit(1);
        }
    }
}
