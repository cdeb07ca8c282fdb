//! End to end: `workflow_otel::install` exports a real run over OTLP/HTTP to a
//! receiver started here on 127.0.0.1; what arrives is decoded with the
//! OTLP protobuf definitions (`opentelemetry-proto`) and checked: one trace
//! `invoke_workflow` -> `invoke_agent` -> `execute_tool`, the service name,
//! the ledger's link to it, and the metrics.
//!
//! One test in this file: `install` sets the process's global subscriber.

// The traced flow is shared with workflow-core's own telemetry test.
#[path = "../../workflow-core/tests/traced/mod.rs"]
mod traced;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc;

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::metrics::v1::metric;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use workflow_core::metrics;
use workflow_otel::OtelConfig;

/// One request the receiver answered.
struct Received {
    path: String,
    content_type: String,
    body: Vec<u8>,
}

/// Starts an OTLP/HTTP receiver on an ephemeral loopback port. Each request
/// is sent on the channel before it is answered, so whatever an exporter's
/// flush waited for is already there when the flush returns.
fn receiver() -> (SocketAddr, mpsc::Receiver<Received>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let addr = listener.local_addr().expect("its address");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let tx = tx.clone();
            std::thread::spawn(move || serve(stream, &tx));
        }
    });
    (addr, rx)
}

/// Serves the HTTP/1.1 requests of one connection (kept alive by the
/// exporter's client) until it closes.
fn serve(stream: TcpStream, tx: &mpsc::Sender<Received>) {
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    loop {
        let mut request_line = String::new();
        match reader.read_line(&mut request_line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let path = request_line
            .split_whitespace()
            .nth(1)
            .unwrap_or_default()
            .to_owned();
        let mut headers = HashMap::new();
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_owned());
            }
        }
        let length: usize = headers
            .get("content-length")
            .and_then(|l| l.parse().ok())
            .expect("the exporter sends a Content-Length");
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let content_type = headers.remove("content-type").unwrap_or_default();
        if tx
            .send(Received {
                path,
                content_type,
                body,
            })
            .is_err()
        {
            return;
        }
        // An empty body is an empty Export*ServiceResponse: all accepted.
        let answer =
            "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
        if writer.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

fn string(value: &Option<AnyValue>) -> String {
    match value.as_ref().and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        Some(any_value::Value::DoubleValue(d)) => d.to_string(),
        other => format!("{other:?}"),
    }
}

fn attr(attributes: &[KeyValue], key: &str) -> Option<String> {
    attributes
        .iter()
        .find(|kv| kv.key == key)
        .map(|kv| string(&kv.value))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn an_exported_run_arrives_as_one_trace_with_its_metrics() {
    let (addr, received) = receiver();
    let guard = workflow_otel::install(OtelConfig {
        endpoint: format!("http://{addr}"),
        service_name: "otel-e2e".into(),
    })
    .expect("installed");

    let (run_id, records) = traced::run(3);
    // Waits until every span and metric is exported and answered.
    guard.shutdown().expect("the receiver took everything");

    let received: Vec<Received> = received.try_iter().collect();
    assert!(
        received
            .iter()
            .all(|r| r.content_type == "application/x-protobuf"),
        "OTLP/HTTP with protobuf bodies"
    );
    let mut spans: Vec<Span> = Vec::new();
    let mut metric_names = Vec::new();
    let mut handoffs = 0;
    let mut duration_bounds = Vec::new();
    for r in &received {
        match r.path.as_str() {
            "/v1/traces" => {
                let request = ExportTraceServiceRequest::decode(r.body.as_slice())
                    .expect("a trace export decodes");
                for rs in request.resource_spans {
                    let resource = rs.resource.expect("a resource");
                    assert_eq!(
                        attr(&resource.attributes, "service.name").as_deref(),
                        Some("otel-e2e")
                    );
                    for ss in rs.scope_spans {
                        spans.extend(ss.spans);
                    }
                }
            }
            "/v1/metrics" => {
                let request = ExportMetricsServiceRequest::decode(r.body.as_slice())
                    .expect("a metrics export decodes");
                for rm in request.resource_metrics {
                    for sm in rm.scope_metrics {
                        for m in sm.metrics {
                            match &m.data {
                                Some(metric::Data::Histogram(h))
                                    if m.name == metrics::OPERATION_DURATION =>
                                {
                                    for p in &h.data_points {
                                        duration_bounds = p.explicit_bounds.clone();
                                    }
                                }
                                Some(metric::Data::Sum(s)) if m.name == metrics::HANDOFFS => {
                                    for p in &s.data_points {
                                        handoffs = handoffs.max(match p.value {
                                            Some(
                                                opentelemetry_proto::tonic::metrics::v1::number_data_point::Value::AsInt(i),
                                            ) => i,
                                            _ => 0,
                                        });
                                    }
                                }
                                _ => {}
                            }
                            metric_names.push(m.name);
                        }
                    }
                }
            }
            other => panic!("unexpected path {other}"),
        }
    }

    // The trace tree.
    assert_eq!(spans.len(), 4, "{spans:#?}");
    let trace = spans[0].trace_id.clone();
    assert_eq!(trace.len(), 16);
    assert!(spans.iter().all(|s| s.trace_id == trace), "one trace");
    let by_name = |name: &str| -> &Span {
        let found: Vec<_> = spans.iter().filter(|s| s.name == name).collect();
        assert_eq!(found.len(), 1, "one `{name}` in {spans:#?}");
        found[0]
    };
    let workflow = by_name("invoke_workflow flow");
    let planner = by_name("invoke_agent planner");
    let doer = by_name("invoke_agent doer");
    let tool = by_name("execute_tool double");
    assert!(workflow.parent_span_id.is_empty(), "the root");
    assert_eq!(planner.parent_span_id, workflow.span_id);
    assert_eq!(doer.parent_span_id, workflow.span_id);
    assert_eq!(tool.parent_span_id, doer.span_id);
    assert_eq!(
        attr(&workflow.attributes, "gen_ai.conversation.id"),
        Some(run_id.to_string())
    );
    assert_eq!(
        attr(&doer.attributes, "gen_ai.agent.name").as_deref(),
        Some("doer")
    );
    assert_eq!(
        attr(&tool.attributes, "gen_ai.tool.name").as_deref(),
        Some("double")
    );
    let handoff_events = workflow
        .events
        .iter()
        .filter(|e| e.name == "handoff")
        .count();
    assert_eq!(handoff_events, 2);

    // Record -> trace, and back through the run id and sequence number.
    assert_eq!(records.len(), 3);
    for r in &records {
        assert_eq!(r.trace_id, hex(&trace), "record #{}", r.seq);
        assert_eq!(r.span_id, hex(&workflow.span_id), "record #{}", r.seq);
    }
    assert_eq!(
        attr(&doer.attributes, "workflow.seq"),
        Some(records[1].seq.to_string())
    );

    // The metrics arrived.
    for name in [metrics::OPERATION_DURATION, metrics::HANDOFFS] {
        assert!(
            metric_names.iter().any(|m| m == name),
            "{name} in {metric_names:?}"
        );
    }
    assert_eq!(duration_bounds, metrics::DURATION_BOUNDARIES);
    assert_eq!(handoffs, 1, "one handoff per edge taken");
}
