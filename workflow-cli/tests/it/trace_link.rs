//! The main example traced with OpenTelemetry (the SDK's in-memory
//! exporter): each run is one well-formed trace tree, and `workflow show`
//! prints, on each record, the trace and span it was recorded in.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use examples::deploy_workflow::{FakeCloud, deploy, staging_goal, staging_root};
use opentelemetry::trace::{SpanId, TracerProvider as _};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use tracing_subscriber::layer::SubscriberExt;
use workflow_core::ledger::SqliteLedger;

use crate::fixtures::{scratch, with_subscriber};

/// The spans of one trace as a text tree, children in start order.
fn tree(spans: &[SpanData], parent: SpanId, indent: &str, out: &mut String) {
    let mut children: Vec<&SpanData> = spans
        .iter()
        .filter(|s| s.parent_span_id == parent)
        .collect();
    children.sort_by_key(|s| s.start_time);
    for s in children {
        out.push_str(&format!("{indent}{}\n", s.name));
        tree(
            spans,
            s.span_context.span_id(),
            &format!("{indent}    "),
            out,
        );
    }
}

/// `workflow show RUN` on `ledger`.
fn show(ledger: &Path, run: u64) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_workflow"))
        .arg("--ledger")
        .arg(ledger)
        .args(["show", &run.to_string()])
        .output()
        .expect("the command runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn each_run_of_the_main_example_is_one_trace_and_its_records_name_it() {
    let dir = scratch("trace");
    let path = dir.join("runs.db");
    let ledger = Arc::new(SqliteLedger::open(&path).expect("opens"));

    let spans = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(spans.clone())
        .build();
    // A layer of our own (the in-memory exporter), so the records are
    // linked to their trace explicitly.
    workflow_otel::link_ledger_records();
    let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("test"));
    let subscriber = tracing_subscriber::registry().with(layer);
    let (stopped, done) = with_subscriber(subscriber, || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("a runtime");
        rt.block_on(async {
            let incident = deploy::Workflow::new(staging_root(), FakeCloud::incident())
                .with_ledger(ledger.clone());
            let stopped = incident.run(staging_goal()).await.expect_err("stopped");
            let clean = deploy::Workflow::new(staging_root(), FakeCloud::one_page())
                .with_ledger(ledger.clone());
            let done = clean.run(staging_goal()).await.expect("completes");
            (stopped.transcript.run_id(), done.transcript.run_id())
        })
    });
    provider.force_flush().expect("flushed");
    let spans = spans.get_finished_spans().expect("the spans");

    for (run, expected) in [
        (
            stopped,
            "\
invoke_workflow deploy
    invoke_agent planner
    invoke_agent network
        execute_tool describe_vpcs
",
        ),
        (
            done,
            "\
invoke_workflow deploy
    invoke_agent planner
    invoke_agent network
        execute_tool describe_vpcs
    invoke_agent terraform
        execute_tool apply_plan
",
        ),
    ] {
        let conversation = run.to_string();
        let root: Vec<&SpanData> = spans
            .iter()
            .filter(|s| {
                s.parent_span_id == SpanId::INVALID
                    && s.attributes.iter().any(|kv| {
                        kv.key.as_str() == "gen_ai.conversation.id"
                            && kv.value.to_string() == conversation
                    })
            })
            .collect();
        assert_eq!(root.len(), 1, "one root for run {run}: {spans:#?}");
        let trace = root[0].span_context.trace_id();
        let of_run: Vec<SpanData> = spans
            .iter()
            .filter(|s| s.span_context.trace_id() == trace)
            .cloned()
            .collect();
        let mut text = String::new();
        tree(&of_run, SpanId::INVALID, "", &mut text);
        assert_eq!(text, expected, "run {run}");
        assert_eq!(
            text.lines().count(),
            of_run.len(),
            "every span of the trace is in the tree: nothing detached"
        );

        let link = format!(" trace {trace} span {}", root[0].span_context.span_id());
        let shown = show(&path, run);
        assert!(
            shown
                .lines()
                .filter(|line| line.starts_with('#'))
                .all(|line| line.ends_with(&link)),
            "{shown}\nshould end each line with{link}"
        );
    }
}
