//! The spans, attributes and metrics of real runs as the OpenTelemetry SDK
//! exports them, caught by its in-memory exporters: one trace per run
//! (`invoke_workflow` -> `invoke_agent` -> `execute_tool`), the GenAI
//! names and attributes, the metrics with their conventional buckets, and
//! the ledger's records linked to the trace.

// The SDK pipelines and the traced flow are shared with workflow-core's own
// tests (its metrics and telemetry tests).
#[allow(dead_code)]
#[path = "../../workflow-core/tests/in_memory/mod.rs"]
mod in_memory;
#[path = "../../workflow-core/tests/traced/mod.rs"]
mod traced;

use std::collections::BTreeMap;

use in_memory::{Sdk, attr, attributes, find, span, tree};
use opentelemetry::trace::{SpanId, SpanKind};
use opentelemetry_sdk::trace::SpanData;
use workflow_core::ledger::{LedgerRecord, Tampering};
use workflow_core::metrics;

/// The SDK pipelines, with the ledger records linked to their trace (what
/// `workflow_otel::install` does for a program).
fn sdk() -> &'static Sdk {
    workflow_otel::link_ledger_records();
    in_memory::sdk()
}

#[test]
fn a_run_is_one_trace_with_the_conventional_names_and_attributes() {
    let sdk = sdk();
    let _turn = sdk.lock();
    let (run_id, records) = sdk.traced(|| traced::run(3));
    let spans = sdk.finished_spans();

    assert_eq!(spans.len(), 4, "{spans:#?}");
    let trace = spans[0].span_context.trace_id();
    assert!(
        spans.iter().all(|s| s.span_context.trace_id() == trace),
        "one trace, nothing detached: {spans:#?}"
    );

    let workflow = span(&spans, "invoke_workflow flow");
    let planner = span(&spans, "invoke_agent planner");
    let doer = span(&spans, "invoke_agent doer");
    let tool = span(&spans, "execute_tool double");
    assert_eq!(workflow.parent_span_id, SpanId::INVALID, "the root");
    let workflow_id = workflow.span_context.span_id();
    assert_eq!(planner.parent_span_id, workflow_id);
    assert_eq!(doer.parent_span_id, workflow_id);
    assert_eq!(tool.parent_span_id, doer.span_context.span_id());

    let run = run_id.to_string();
    assert_eq!(
        attr(workflow, "gen_ai.operation.name").as_deref(),
        Some("invoke_workflow")
    );
    assert_eq!(attr(workflow, "gen_ai.conversation.id"), Some(run.clone()));
    assert_eq!(attr(workflow, "workflow.name").as_deref(), Some("flow"));
    assert_eq!(attr(workflow, "error.type"), None);
    for (agent, name, id) in [(planner, "planner", "0"), (doer, "doer", "1")] {
        assert_eq!(agent.span_kind, SpanKind::Internal);
        assert_eq!(
            attr(agent, "gen_ai.operation.name").as_deref(),
            Some("invoke_agent")
        );
        assert_eq!(attr(agent, "gen_ai.agent.name").as_deref(), Some(name));
        assert_eq!(attr(agent, "gen_ai.agent.id").as_deref(), Some(id));
        assert_eq!(attr(agent, "gen_ai.conversation.id"), Some(run.clone()));
    }
    assert_eq!(
        attr(tool, "gen_ai.operation.name").as_deref(),
        Some("execute_tool")
    );
    assert_eq!(attr(tool, "gen_ai.tool.name").as_deref(), Some("double"));
    assert_eq!(attr(tool, "error.type"), None);

    // The handoff events sit on the workflow span, one per decided receipt.
    let handoffs: Vec<_> = workflow
        .events
        .iter()
        .filter(|e| e.name == "handoff")
        .map(|e| attributes(&e.attributes))
        .collect();
    assert_eq!(handoffs.len(), 2, "{handoffs:#?}");
    assert_eq!(handoffs[1]["workflow.sender"], "planner");
    assert_eq!(handoffs[1]["workflow.receiver"], "doer");
    assert_eq!(handoffs[1]["workflow.receipt"], "accepted");
    assert_eq!(handoffs[1]["workflow.seq"], "1");

    assert_linked(&records, workflow, &[planner, doer]);

    // The tree as the book shows it.
    assert_eq!(
        tree(&spans),
        "\
invoke_workflow flow
├── handoff START -> planner: accepted (seq 0)
├── invoke_agent planner (seq 0, hop 0)
├── handoff planner -> doer: accepted (seq 1)
└── invoke_agent doer (seq 1, hop 1)
    └── execute_tool double
"
    );

    let points = sdk.points();
    let duration = metrics::OPERATION_DURATION;
    for (operation, subject, name) in [
        ("invoke_workflow", "workflow.name", "flow"),
        ("invoke_agent", "gen_ai.agent.name", "planner"),
        ("invoke_agent", "gen_ai.agent.name", "doer"),
        ("execute_tool", "gen_ai.tool.name", "double"),
    ] {
        let found = find(
            &points,
            duration,
            &[("gen_ai.operation.name", operation), (subject, name)],
        );
        assert_eq!(found.len(), 1, "{operation} {name}: {points:#?}");
        let p = found[0];
        assert_eq!(p.value, 1.0, "one measurement");
        assert_eq!(p.unit, "s");
        assert_eq!(
            p.bounds,
            metrics::DURATION_BOUNDARIES,
            "the conventional buckets"
        );
        assert!(!p.attributes.contains_key("error.type"), "{p:?}");
    }
    let accepted = find(
        &points,
        metrics::HANDOFFS,
        &[("workflow.receipt", "accepted")],
    );
    let edges: BTreeMap<_, _> = accepted
        .iter()
        .map(|p| {
            let edge = format!(
                "{} -> {}",
                p.attributes["workflow.sender"], p.attributes["workflow.receiver"]
            );
            (edge, p.value)
        })
        .collect();
    assert_eq!(
        edges,
        BTreeMap::from([
            ("START -> planner".to_owned(), 1.0),
            ("planner -> doer".to_owned(), 1.0)
        ])
    );
    assert!(find(&points, metrics::CONDITION_FAILURES, &[]).is_empty());
}

/// Each record carries the trace and the span of its handoff event (the
/// workflow span), and the agent span of the turn a transfer started has
/// the record's `workflow.seq`.
fn assert_linked(records: &[LedgerRecord], workflow: &SpanData, agents: &[&SpanData]) {
    assert_eq!(records.len(), 3, "START -> planner -> doer -> END");
    let trace = workflow.span_context.trace_id().to_string();
    let span = workflow.span_context.span_id().to_string();
    assert_eq!(trace.len(), 32);
    for r in records {
        assert_eq!(r.trace_id, trace, "record #{}", r.seq);
        assert_eq!(r.span_id, span, "record #{}", r.seq);
    }
    for (agent, record) in agents.iter().zip(records) {
        assert_eq!(attr(agent, "workflow.seq"), Some(record.seq.to_string()));
        assert_eq!(attr(agent, "workflow.hop"), Some(record.hop.to_string()));
        assert_eq!(
            attr(agent, "gen_ai.conversation.id"),
            Some(record.run_id.to_string())
        );
        assert_eq!(
            attr(agent, "gen_ai.agent.name"),
            Some(record.to.to_string()),
            "the turn the record's transfer started"
        );
    }
}

#[test]
fn a_failed_pre_condition_is_counted_on_its_edge() {
    let sdk = sdk();
    let _turn = sdk.lock();
    let (_, records) = sdk.traced(|| traced::run(50));
    let spans = sdk.finished_spans();
    let workflow = span(&spans, "invoke_workflow flow");
    assert_eq!(attr(workflow, "error.type").as_deref(), Some("rejected"));
    assert_eq!(
        tree(&spans),
        "\
invoke_workflow flow (error.type rejected)
├── handoff START -> planner: accepted (seq 0)
├── invoke_agent planner (seq 0, hop 0)
└── handoff planner -> doer: rejected (seq 1), pre-condition `task.n < 10` failed: small numbers only
"
    );
    assert!(records.iter().all(|r| !r.trace_id.is_empty()));

    let points = sdk.points();
    let rejected = find(
        &points,
        metrics::HANDOFFS,
        &[("workflow.receipt", "rejected")],
    );
    assert_eq!(rejected.len(), 1, "{points:#?}");
    assert_eq!(rejected[0].value, 1.0);
    assert_eq!(
        rejected[0].attributes["workflow.reject_reason"],
        "pre_condition"
    );
    assert_eq!(rejected[0].attributes["workflow.sender"], "planner");
    assert_eq!(rejected[0].attributes["workflow.receiver"], "doer");

    let failures = find(&points, metrics::CONDITION_FAILURES, &[]);
    assert_eq!(failures.len(), 1, "{points:#?}");
    let f = &failures[0].attributes;
    assert_eq!(f["workflow.condition.kind"], "pre");
    assert_eq!(f["workflow.agent"], "doer");
    assert_eq!(f["workflow.sender"], "planner");
    assert!(f["workflow.condition"].contains("task.n < 10"), "{f:?}");
    // Enforced: nothing let through, no verdict counted.
    assert!(find(&points, metrics::AUDIT_VERDICTS, &[]).is_empty());

    let run = find(
        &points,
        metrics::OPERATION_DURATION,
        &[("gen_ai.operation.name", "invoke_workflow")],
    );
    assert_eq!(run.len(), 1);
    assert_eq!(run[0].attributes["error.type"], "rejected");
    assert!(
        find(
            &points,
            metrics::OPERATION_DURATION,
            &[("gen_ai.agent.name", "doer")]
        )
        .is_empty(),
        "the rejected receiver never ran"
    );
}

#[test]
fn an_audit_verdict_is_counted_and_the_handoff_counted_as_audited() {
    let sdk = sdk();
    let _turn = sdk.lock();
    let (_, records) = sdk.traced(|| traced::run_in(50, workflow_core::Mode::Audit));
    assert!(records.iter().all(|r| r.mode == workflow_core::Mode::Audit));
    let points = sdk.points();
    let verdicts = find(&points, metrics::AUDIT_VERDICTS, &[]);
    assert_eq!(verdicts.len(), 1, "{points:#?}");
    assert_eq!(verdicts[0].value, 1.0);
    let v = &verdicts[0].attributes;
    assert_eq!(v["workflow.reject_reason"], "pre_condition");
    assert_eq!(v["workflow.sender"], "planner");
    assert_eq!(v["workflow.receiver"], "doer");
    let audited = find(
        &points,
        metrics::HANDOFFS,
        &[("workflow.receipt", "audited")],
    );
    assert_eq!(audited.len(), 1, "{points:#?}");
}

#[test]
fn a_failed_post_condition_is_counted_on_its_agent() {
    let sdk = sdk();
    let _turn = sdk.lock();
    sdk.traced(|| traced::run(6));
    let points = sdk.points();
    let failures = find(&points, metrics::CONDITION_FAILURES, &[]);
    assert_eq!(failures.len(), 1, "{points:#?}");
    let f = &failures[0].attributes;
    assert_eq!(f["workflow.condition.kind"], "post");
    assert_eq!(f["workflow.agent"], "doer");
    assert!(!f.contains_key("workflow.sender"), "no edge was taken");
    let run = find(
        &points,
        metrics::OPERATION_DURATION,
        &[("gen_ai.operation.name", "invoke_workflow")],
    );
    assert_eq!(run[0].attributes["error.type"], "post_condition");
}

#[test]
fn a_failed_tool_call_has_an_error_type() {
    let sdk = sdk();
    let _turn = sdk.lock();
    sdk.traced(|| traced::run(7));
    let spans = sdk.finished_spans();
    let tool = span(&spans, "execute_tool double");
    assert_eq!(attr(tool, "error.type").as_deref(), Some("tool_error"));

    let points = sdk.points();
    let tool = find(
        &points,
        metrics::OPERATION_DURATION,
        &[("gen_ai.tool.name", "double")],
    );
    assert_eq!(tool.len(), 1, "{points:#?}");
    assert_eq!(tool[0].attributes["error.type"], "tool_error");
    let doer = find(
        &points,
        metrics::OPERATION_DURATION,
        &[("gen_ai.agent.name", "doer")],
    );
    assert_eq!(doer[0].attributes["error.type"], "agent_failed");
}

#[test]
fn token_usage_is_recorded_by_token_type() {
    let sdk = sdk();
    let _turn = sdk.lock();
    metrics::record_token_usage(&metrics::TokenUsage {
        operation: "chat",
        provider: "openai",
        request_model: Some("gpt-4"),
        agent: Some("planner"),
        input_tokens: Some(300),
        output_tokens: Some(20),
        ..Default::default()
    });
    metrics::record_token_usage(&metrics::TokenUsage {
        operation: "chat",
        provider: "openai",
        output_tokens: Some(5),
        ..Default::default()
    });
    let points = sdk.points();
    let usage = metrics::TOKEN_USAGE;
    let input = find(&points, usage, &[("gen_ai.token.type", "input")]);
    assert_eq!(input.len(), 1, "{points:#?}");
    assert_eq!(input[0].value, 300.0);
    assert_eq!(input[0].unit, "{token}");
    assert_eq!(
        input[0].bounds,
        metrics::TOKEN_BOUNDARIES,
        "the conventional buckets"
    );
    assert_eq!(input[0].attributes["gen_ai.operation.name"], "chat");
    assert_eq!(input[0].attributes["gen_ai.provider.name"], "openai");
    assert_eq!(input[0].attributes["gen_ai.request.model"], "gpt-4");
    assert_eq!(input[0].attributes["gen_ai.agent.name"], "planner");
    let output = find(&points, usage, &[("gen_ai.token.type", "output")]);
    let total: f64 = output.iter().map(|p| p.value).sum();
    assert_eq!(total, 25.0, "{output:#?}");
    assert_eq!(
        find(&points, usage, &[("gen_ai.request.model", "gpt-4")]).len(),
        2,
        "the model only where it was given"
    );
}

#[test]
fn the_trace_link_is_hashed_and_a_record_without_one_hashes_as_before() {
    let sdk = sdk();
    let _turn = sdk.lock();
    let (run_id, records) = sdk.traced(|| traced::run(3));
    let check = |records: &[LedgerRecord]| {
        let head = records.last().map(|r| (r.seq, r.hash.as_str()));
        workflow_core::ledger::verify(run_id, records, head)
    };
    assert_eq!(check(&records), Ok(()));
    let mut edited = records.clone();
    edited[1].trace_id = "0".repeat(32);
    assert_eq!(check(&edited), Err(Tampering::Edited { seq: 1 }));
    let mut cut = records.clone();
    cut[2].trace_id.clear();
    cut[2].span_id.clear();
    assert_eq!(check(&cut), Err(Tampering::Edited { seq: 2 }));

    // Written before records had a trace link: the same hash as then (the
    // SHA-256 of its length-prefixed fields, computed independently).
    let old = LedgerRecord {
        workflow: "w".into(),
        run_id: 7,
        seq: 0,
        hop: 0,
        from: workflow_core::Endpoint::Start,
        to: workflow_core::Endpoint::End,
        payload_type: "u32".into(),
        payload_format: workflow_core::ledger::PayloadFormat::Json,
        payload: "31".into(),
        receipt: workflow_core::Receipt::Accepted,
        at_us: 0,
        redelivery: false,
        turn: None,
        trace_id: String::new(),
        span_id: String::new(),
        root: None,
        sender_scope: None,
        mode: Default::default(),
        lineage: None,
        prev_hash: workflow_core::ledger::GENESIS.into(),
        hash: String::new(),
    };
    assert_eq!(
        old.compute_hash(),
        "f5a934cb6b0b7ebfe500075c4aa33e35b7796cbcd5b3c006192450b7649f086e"
    );
    let json = serde_json::to_string(&old).expect("serializes");
    assert!(
        !json.contains("trace_id"),
        "no empty link is written: {json}"
    );
    let back: LedgerRecord = serde_json::from_str(&json).expect("an old record reads back");
    assert_eq!(back, old);
}

/// One agent that outlives its time limit.
#[workflow_core::workflow(entry = sleeper, output = u32)]
pub mod slow {
    use workflow_core::prelude::*;

    #[agent(to = [END], timeout_ms = 20)]
    async fn sleeper(n: u32, _cx: sleeper::Context<'_>) -> Result<sleeper::Next, Reject> {
        tokio::time::sleep(std::time::Duration::from_secs(5)).await;
        Ok(sleeper::Next::End(n))
    }
}

#[test]
fn a_turn_cut_by_its_timeout_is_timed_as_a_timeout() {
    let sdk = sdk();
    let _turn = sdk.lock();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime");
    let error = sdk.traced(|| {
        rt.block_on(slow::Workflow::new((), ()).run(1))
            .err()
            .map(|aborted| aborted.error)
    });
    assert!(
        matches!(error, Some(workflow_core::RunError::Timeout { .. })),
        "{error:?}"
    );
    let points = sdk.points();
    let turn = find(
        &points,
        metrics::OPERATION_DURATION,
        &[("gen_ai.agent.name", "sleeper")],
    );
    assert_eq!(turn.len(), 1, "{points:#?}");
    assert_eq!(turn[0].attributes["error.type"], "timeout");
    let run = find(
        &points,
        metrics::OPERATION_DURATION,
        &[("gen_ai.operation.name", "invoke_workflow")],
    );
    assert_eq!(run[0].attributes["error.type"], "timeout");
}
