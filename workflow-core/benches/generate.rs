//! What the seam costs a model call: a two-agent run whose first agent
//! builds its handoff itself, against the same run where the handoff comes
//! from `cx.generate` (a model answering at once with a valid reply, so
//! that only the seam is measured: schema generation, validation,
//! deserialization, the charge and the record), and with one repair.
//!
//! Run: `cargo bench -p workflow-core --bench generate`

use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use workflow_core::llm::{Model, ModelFuture, ModelReply, ModelRequest};
use workflow_core::prelude::*;

/// Replies with `bad` to a first request and `good` to a repair.
struct Canned {
    good: String,
    bad: Option<String>,
}

impl Model for Canned {
    fn name(&self) -> &str {
        "canned"
    }

    fn complete<'a>(&'a self, request: &'a ModelRequest) -> ModelFuture<'a> {
        let text = match &self.bad {
            Some(bad) if request.messages.len() <= 2 => bad.clone(),
            _ => self.good.clone(),
        };
        Box::pin(std::future::ready(Ok(
            ModelReply::text(text).with_usage(Usage::tokens(100, 30))
        )))
    }
}

#[workflow(entry = triager, output = String)]
pub mod desk {
    use super::*;

    /// Triager -> fixer.
    #[handoff]
    pub struct FixTask {
        /// What to do.
        #[operation]
        pub op: Operation,
        /// Under the fixer's authority.
        #[authority]
        pub scope: Scope<authority::Fix>,
        /// What it relied on.
        #[evidence]
        pub evidence: Vec<Evidence>,
        /// What it left open.
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        /// When to stop.
        #[stop]
        pub stop: StopWhen,
        /// The service.
        pub service: String,
    }

    #[agent(owns = [Triage], to = [fixer])]
    async fn triager(mode: String, cx: triager::Context<'_>) -> Result<triager::Next, Reject> {
        let task = if mode == "built" {
            FixTask {
                op: Operation::new("fix", "restart it"),
                scope: cx.lease(authority::Fix).as_long_as_mine(),
                evidence: vec![],
                open: vec![],
                stop: StopWhen::at_hop(cx.hop() + 8),
                service: "api".into(),
            }
        } else {
            cx.generate(Prompt::new("the api returns 502")).await?
        };
        Ok(triager::Next::Fixer(task))
    }

    #[agent(owns = [Fix], to = [END])]
    async fn fixer(task: FixTask, _cx: fixer::Context<'_>) -> Result<fixer::Next, Reject> {
        Ok(fixer::Next::End(task.service))
    }
}

const GOOD: &str = r#"{"op":{"name":"fix","detail":"restart it"},"scope":{"authority":"Fix","expires":"never"},"evidence":[],"open":[],"stop":[{"kind":"hop_reached","hop":10}],"service":"api"}"#;
const BAD: &str = r#"{"op":{"name":"fix","detail":"restart it"},"scope":{"authority":"Fix","expires":"never"},"open":[],"stop":[],"service":"api"}"#;

fn seam(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    let valid = desk::Workflow::new((), ()).with_model(Arc::new(Canned {
        good: GOOD.into(),
        bad: None,
    }));
    let repaired = desk::Workflow::new((), ()).with_model(Arc::new(Canned {
        good: GOOD.into(),
        bad: Some(BAD.into()),
    }));
    let mut group = c.benchmark_group("run");
    group.bench_function("handoff built by the agent", |b| {
        b.iter(|| rt.block_on(valid.run("built".into())).expect("completes"))
    });
    group.bench_function("handoff generated, valid", |b| {
        b.iter(|| {
            rt.block_on(valid.run("generate".into()))
                .expect("completes")
        })
    });
    group.bench_function("handoff generated, one repair", |b| {
        b.iter(|| {
            rt.block_on(repaired.run("generate".into()))
                .expect("completes")
        })
    });
    group.finish();
}

criterion_group!(benches, seam);
criterion_main!(benches);
