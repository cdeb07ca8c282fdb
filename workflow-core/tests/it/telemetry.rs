//! With the `tracing` feature, a run is one trace: `invoke_workflow` at the
//! root, an `invoke_agent` span per turn under it, `execute_tool` under the
//! agent that called the tool, and a `handoff` event per decided receipt;
//! names and attributes follow the OpenTelemetry GenAI conventions.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use workflow_core::prelude::*;

#[derive(Debug, Clone, Default)]
struct SpanSeen {
    name: String,
    parent: Option<String>,
    fields: HashMap<String, String>,
}

#[derive(Default)]
struct Seen {
    spans: HashMap<u64, SpanSeen>,
    events: Vec<(Option<String>, HashMap<String, String>)>,
}

struct Fields<'a>(&'a mut HashMap<String, String>);
impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(
            field.name().to_owned(),
            format!("{value:?}").trim_matches('"').to_owned(),
        );
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

struct Capture(Arc<Mutex<Seen>>);

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut seen = SpanSeen {
            name: attrs.metadata().name().to_owned(),
            parent: ctx
                .span(id)
                .and_then(|s| s.parent())
                .map(|p| p.name().to_owned()),
            ..SpanSeen::default()
        };
        attrs.record(&mut Fields(&mut seen.fields));
        self.0.lock().unwrap().spans.insert(id.into_u64(), seen);
    }
    fn on_record(&self, id: &Id, values: &Record<'_>, _: Context<'_, S>) {
        if let Some(span) = self.0.lock().unwrap().spans.get_mut(&id.into_u64()) {
            values.record(&mut Fields(&mut span.fields));
        }
    }
    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut fields = HashMap::new();
        event.record(&mut Fields(&mut fields));
        let span = ctx.lookup_current().map(|s| s.name().to_owned());
        self.0.lock().unwrap().events.push((span, fields));
    }
}

// The flow the OpenTelemetry tests run too (planner -> doer, which calls
// `double`).
use crate::fixtures::traced::{self, Out};
use crate::fixtures::with_subscriber;

/// Runs the flow on `n` under the capturing subscriber.
fn captured(n: u32) -> (Seen, u64) {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let subscriber = tracing_subscriber::registry().with(Capture(seen.clone()));
    let (run_id, _) = with_subscriber(subscriber, || traced::run(n));
    let seen = std::mem::take(&mut *seen.lock().unwrap());
    (seen, run_id)
}

#[test]
fn a_run_is_one_trace_with_the_conventional_names() {
    let (seen, run_id) = captured(3);
    let spans: Vec<&SpanSeen> = seen.spans.values().collect();
    let workflow: Vec<_> = spans
        .iter()
        .filter(|s| s.name == "invoke_workflow")
        .collect();
    assert_eq!(workflow.len(), 1);
    assert_eq!(workflow[0].parent, None, "the workflow span is the root");
    assert_eq!(workflow[0].fields["otel.name"], "invoke_workflow flow");
    assert_eq!(
        workflow[0].fields["gen_ai.conversation.id"],
        run_id.to_string()
    );

    let mut agents: Vec<_> = spans.iter().filter(|s| s.name == "invoke_agent").collect();
    agents.sort_by_key(|s| s.fields["workflow.hop"].clone());
    let names: Vec<_> = agents
        .iter()
        .map(|s| s.fields["gen_ai.agent.name"].as_str())
        .collect();
    assert_eq!(names, ["planner", "doer"]);
    for a in &agents {
        assert_eq!(a.parent.as_deref(), Some("invoke_workflow"));
        assert_eq!(a.fields["gen_ai.operation.name"], "invoke_agent");
        assert_eq!(
            a.fields["otel.name"],
            format!("invoke_agent {}", a.fields["gen_ai.agent.name"])
        );
    }

    let tools: Vec<_> = spans.iter().filter(|s| s.name == "execute_tool").collect();
    assert_eq!(tools.len(), 1);
    assert_eq!(
        tools[0].parent.as_deref(),
        Some("invoke_agent"),
        "the tool runs in the agent's turn"
    );
    assert_eq!(tools[0].fields["gen_ai.tool.name"], "double");

    let handoffs: Vec<_> = seen
        .events
        .iter()
        .filter(|(_, f)| f.get("message").map(String::as_str) == Some("handoff"))
        .collect();
    assert_eq!(handoffs.len(), 2, "one per decided receipt");
    assert!(
        handoffs
            .iter()
            .all(|(span, f)| span.as_deref() == Some("invoke_workflow")
                && f["workflow.receipt"] == "accepted")
    );
    assert_eq!(handoffs[1].1["workflow.sender"], "planner");
    assert_eq!(handoffs[1].1["workflow.receiver"], "doer");
}

#[test]
fn a_rejection_shows_on_the_event_and_the_workflow_span() {
    let (seen, _) = captured(50);
    let rejected = seen
        .events
        .iter()
        .find(|(_, f)| f.get("workflow.receipt").map(String::as_str) == Some("rejected"))
        .expect("a rejected handoff event");
    assert!(
        rejected.1["workflow.reject_reason"].contains("small numbers only"),
        "{:?}",
        rejected.1
    );
    let workflow = seen
        .spans
        .values()
        .find(|s| s.name == "invoke_workflow")
        .unwrap();
    assert_eq!(
        workflow.fields.get("error.type").map(String::as_str),
        Some("rejected")
    );
}

#[workflow(entry = asker, output = Out)]
pub mod asking {
    use super::*;

    #[agent(to = [END])]
    async fn asker(n: u32, cx: asker::Context<'_>) -> Result<asker::Next, Reject> {
        let out: Out = cx.generate(format!("double {n}")).await?;
        Ok(asker::Next::End(out))
    }
}

/// The spans of a run of `asking` whose model gives `replies`.
fn traced_model(replies: &[&str]) -> Vec<SpanSeen> {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let subscriber = tracing_subscriber::registry().with(Capture(seen.clone()));
    let model = replies
        .iter()
        .fold(workflow_core::llm::ScriptedModel::named("small"), |m, r| {
            m.reply_with(workflow_core::llm::ModelReply::text(*r).with_usage(Usage::tokens(10, 2)))
        });
    with_subscriber(subscriber, || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let _ = rt.block_on(
            asking::Workflow::new((), ())
                .with_model(Arc::new(model))
                .run(3),
        );
    });
    let seen = std::mem::take(&mut *seen.lock().unwrap());
    seen.spans.into_values().collect()
}

#[test]
fn a_model_call_is_a_chat_span_in_the_agents_turn() {
    let spans = traced_model(&["\"six\"", "6"]);
    let chats: Vec<_> = spans.iter().filter(|s| s.name == "chat").collect();
    assert_eq!(chats.len(), 1, "one span per call, repairs included");
    let chat = &chats[0].fields;
    assert_eq!(chats[0].parent.as_deref(), Some("invoke_agent"));
    assert_eq!(chat["otel.name"], "chat small");
    assert_eq!(chat["gen_ai.operation.name"], "chat");
    assert_eq!(chat["gen_ai.request.model"], "small");
    assert_eq!(chat["gen_ai.usage.input_tokens"], "20");
    assert_eq!(chat["gen_ai.usage.output_tokens"], "4");
    assert_eq!(chat["workflow.model.attempts"], "2");
    assert!(!chat.contains_key("error.type"));

    let spans = traced_model(&["\"six\"", "\"six\"", "\"six\""]);
    let chat = &spans
        .iter()
        .find(|s| s.name == "chat")
        .expect("a chat span")
        .fields;
    assert_eq!(chat["error.type"], "retries_exhausted");
}

#[test]
fn a_tool_loop_is_a_chat_span_per_step_and_an_execute_tool_span_per_call_under_the_agent() {
    use crate::tool_loop::{Desk, Ticket, oncall};
    use workflow_core::llm::{ScriptedModel, ToolCallRequest};
    let seen = Arc::new(Mutex::new(Seen::default()));
    let subscriber = tracing_subscriber::registry().with(Capture(seen.clone()));
    let model = ScriptedModel::named("small")
        .call_tools([
            ToolCallRequest::new("a", "lookup_service", r#"{"name":"api"}"#),
            ToolCallRequest::new("b", "page_oncall", r#"{"service":"api"}"#),
        ])
        .reply(r#"{"service":"api","paged":true}"#);
    with_subscriber(subscriber, || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        rt.block_on(
            oncall::Workflow::new((), Desk::default())
                .with_model(Arc::new(model))
                .run(Ticket {
                    text: "the api returns 502".into(),
                    max_steps: 4,
                }),
        )
        .expect("completes");
    });
    let spans: Vec<SpanSeen> = std::mem::take(&mut *seen.lock().unwrap())
        .spans
        .into_values()
        .collect();
    let mut chats: Vec<_> = spans.iter().filter(|s| s.name == "chat").collect();
    chats.sort_by_key(|s| s.fields["workflow.model.step"].clone());
    assert_eq!(chats.len(), 2, "one span per model step");
    for chat in &chats {
        assert_eq!(chat.parent.as_deref(), Some("invoke_agent"));
        assert_eq!(chat.fields["otel.name"], "chat small");
    }
    assert_eq!(chats[0].fields["workflow.model.tool_calls"], "2");
    assert_eq!(chats[1].fields["workflow.model.tool_calls"], "0");
    let mut tools: Vec<_> = spans
        .iter()
        .filter(|s| s.name == "execute_tool")
        .map(|s| (s.parent.clone(), s.fields["gen_ai.tool.name"].clone()))
        .collect();
    tools.sort();
    assert_eq!(
        tools,
        [
            (Some("invoke_agent".to_owned()), "lookup_service".to_owned()),
            (Some("invoke_agent".to_owned()), "page_oncall".to_owned()),
        ],
        "the calls are siblings of the steps, under the agent"
    );
}

#[test]
fn branch_turns_are_sibling_spans_under_their_fan_out() {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let subscriber = tracing_subscriber::registry().with(Capture(seen.clone()));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    tracing::subscriber::with_default(subscriber, || {
        rt.block_on(crate::parallel_dsl::review::Workflow::new((), ()).run("a change".into()))
            .unwrap()
    });
    let seen = std::mem::take(&mut *seen.lock().unwrap());
    let fan: Vec<&SpanSeen> = seen
        .spans
        .values()
        .filter(|s| s.name == "fan_out")
        .collect();
    assert_eq!(fan.len(), 1);
    assert_eq!(fan[0].parent.as_deref(), Some("invoke_workflow"));
    assert_eq!(fan[0].fields["otel.name"], "fan_out lead");
    let mut branches: Vec<String> = seen
        .spans
        .values()
        .filter(|s| s.name == "invoke_agent" && s.parent.as_deref() == Some("fan_out"))
        .map(|s| s.fields["gen_ai.agent.name"].clone())
        .collect();
    branches.sort();
    assert_eq!(branches, ["security", "style"]);
    // The lead's and the judge's turns stay under the workflow.
    let mut others: Vec<String> = seen
        .spans
        .values()
        .filter(|s| s.name == "invoke_agent" && s.parent.as_deref() == Some("invoke_workflow"))
        .map(|s| s.fields["gen_ai.agent.name"].clone())
        .collect();
    others.sort();
    assert_eq!(others, ["judge", "lead"]);
}
