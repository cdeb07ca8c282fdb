//! The OpenTelemetry SDK with in-memory exporters, for the tests that
//! check what the runtime's spans and metrics become.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, OnceLock};

use opentelemetry::KeyValue;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{
    InMemoryMetricExporter, InMemoryMetricExporterBuilder, PeriodicReader, SdkMeterProvider,
    Temporality,
};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use tracing_subscriber::layer::SubscriberExt;
use workflow_core::metrics;

/// The SDK pipelines, shared by the tests of a test binary: the meter
/// provider is global, so the tests take turns (`Sdk::lock`).
pub struct Sdk {
    spans: InMemorySpanExporter,
    tracer_provider: SdkTracerProvider,
    metrics: InMemoryMetricExporter,
    meter_provider: SdkMeterProvider,
    turn: Mutex<()>,
}

/// The pipelines, made (and the meter provider installed) once per binary.
pub fn sdk() -> &'static Sdk {
    static SDK: OnceLock<Sdk> = OnceLock::new();
    SDK.get_or_init(|| {
        let spans = InMemorySpanExporter::default();
        // The simple processor exports each span as it ends: nothing is
        // left in a batch when a run returns.
        let tracer_provider = SdkTracerProvider::builder()
            .with_simple_exporter(spans.clone())
            .build();
        // Delta temporality: each collection holds only what was recorded
        // since the one before, so a test sees its own run alone.
        let metrics = InMemoryMetricExporterBuilder::new()
            .with_temporality(Temporality::Delta)
            .build();
        let meter_provider = SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(metrics.clone()).build())
            .build();
        opentelemetry::global::set_meter_provider(meter_provider.clone());
        metrics::use_global_meter_provider();
        Sdk {
            spans,
            tracer_provider,
            metrics,
            meter_provider,
            turn: Mutex::new(()),
        }
    })
}

impl Sdk {
    /// This test's turn, with nothing left over from the one before.
    pub fn lock(&self) -> MutexGuard<'_, ()> {
        let turn = self.turn.lock().unwrap_or_else(|e| e.into_inner());
        self.meter_provider.force_flush().expect("metrics flush");
        self.metrics.reset();
        self.spans.reset();
        turn
    }

    /// Runs `f` with the OpenTelemetry layer as this thread's subscriber.
    pub fn traced<T>(&self, f: impl FnOnce() -> T) -> T {
        let layer = tracing_opentelemetry::layer().with_tracer(self.tracer_provider.tracer("test"));
        let subscriber = tracing_subscriber::registry().with(layer);
        tracing::subscriber::with_default(subscriber, f)
    }

    pub fn finished_spans(&self) -> Vec<SpanData> {
        self.tracer_provider.force_flush().expect("spans flush");
        self.spans.get_finished_spans().expect("the spans")
    }

    pub fn points(&self) -> Vec<Point> {
        self.meter_provider.force_flush().expect("metrics flush");
        points(&self.metrics)
    }
}

/// One data point of one metric, flattened.
#[derive(Debug)]
pub struct Point {
    pub metric: String,
    pub unit: String,
    pub attributes: BTreeMap<String, String>,
    /// The sum of a counter, the count (f64 histogram) or sum (u64
    /// histogram) of a histogram.
    pub value: f64,
    pub bounds: Vec<f64>,
}

pub fn attributes<'a>(kvs: impl IntoIterator<Item = &'a KeyValue>) -> BTreeMap<String, String> {
    kvs.into_iter()
        .map(|kv| (kv.key.to_string(), kv.value.to_string()))
        .collect()
}

pub fn points(exporter: &InMemoryMetricExporter) -> Vec<Point> {
    let mut out = Vec::new();
    for resource in exporter.get_finished_metrics().expect("the metrics") {
        for scope in resource.scope_metrics() {
            for metric in scope.metrics() {
                let point = |attributes, value, bounds| Point {
                    metric: metric.name().to_owned(),
                    unit: metric.unit().to_owned(),
                    attributes,
                    value,
                    bounds,
                };
                match metric.data() {
                    AggregatedMetrics::F64(MetricData::Histogram(h)) => {
                        for p in h.data_points() {
                            let bounds = p.bounds().collect();
                            out.push(point(attributes(p.attributes()), p.count() as f64, bounds));
                        }
                    }
                    AggregatedMetrics::U64(MetricData::Histogram(h)) => {
                        for p in h.data_points() {
                            let bounds = p.bounds().collect();
                            out.push(point(attributes(p.attributes()), p.sum() as f64, bounds));
                        }
                    }
                    AggregatedMetrics::U64(MetricData::Sum(s)) => {
                        for p in s.data_points() {
                            out.push(point(attributes(p.attributes()), p.value() as f64, vec![]));
                        }
                    }
                    other => panic!("unexpected metric data {other:?}"),
                }
            }
        }
    }
    out
}

/// The points of `metric` whose attributes include all of `with`.
pub fn find<'a>(points: &'a [Point], metric: &str, with: &[(&str, &str)]) -> Vec<&'a Point> {
    points
        .iter()
        .filter(|p| {
            p.metric == metric
                && with
                    .iter()
                    .all(|(k, v)| p.attributes.get(*k).map(String::as_str) == Some(*v))
        })
        .collect()
}

pub fn attr(span: &SpanData, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.to_string())
}

pub fn span<'a>(spans: &'a [SpanData], name: &str) -> &'a SpanData {
    let found: Vec<_> = spans.iter().filter(|s| s.name == name).collect();
    assert_eq!(found.len(), 1, "one span `{name}` in {spans:#?}");
    found[0]
}

/// The spans as a text tree, children and `handoff` events in time order:
/// what a trace viewer shows, without the ids and the times.
pub fn tree(spans: &[SpanData]) -> String {
    let mut out = String::new();
    for root in spans
        .iter()
        .filter(|s| s.parent_span_id == opentelemetry::trace::SpanId::INVALID)
    {
        out.push_str(&label(root));
        out.push('\n');
        children(spans, root, "", &mut out);
    }
    out
}

fn label(span: &SpanData) -> String {
    let mut label = span.name.to_string();
    let notes: Vec<String> = [("workflow.seq", "seq"), ("workflow.hop", "hop")]
        .iter()
        .filter_map(|(key, short)| attr(span, key).map(|v| format!("{short} {v}")))
        .chain(attr(span, "error.type").map(|e| format!("error.type {e}")))
        .collect();
    if !notes.is_empty() {
        label.push_str(&format!(" ({})", notes.join(", ")));
    }
    label
}

fn children(spans: &[SpanData], parent: &SpanData, indent: &str, out: &mut String) {
    enum Child<'a> {
        Span(&'a SpanData),
        Event(String),
    }
    let id = parent.span_context.span_id();
    let mut items: Vec<(std::time::SystemTime, Child<'_>)> = spans
        .iter()
        .filter(|s| s.parent_span_id == id)
        .map(|s| (s.start_time, Child::Span(s)))
        .collect();
    for event in parent.events.iter() {
        let a = attributes(&event.attributes);
        let field = |k: &str| a.get(k).cloned().unwrap_or_default();
        let mut text = format!(
            "{} {} -> {}: {} (seq {})",
            event.name,
            field("workflow.sender"),
            field("workflow.receiver"),
            field("workflow.receipt"),
            field("workflow.seq")
        );
        if !field("workflow.reject_reason").is_empty() {
            text.push_str(&format!(", {}", field("workflow.reject_reason")));
        }
        items.push((event.timestamp, Child::Event(text)));
    }
    items.sort_by_key(|(at, _)| *at);
    let last = items.len().saturating_sub(1);
    for (i, (_, child)) in items.into_iter().enumerate() {
        let (branch, next) = if i == last {
            ("└── ", "    ")
        } else {
            ("├── ", "│   ")
        };
        match child {
            Child::Span(span) => {
                out.push_str(&format!("{indent}{branch}{}\n", label(span)));
                children(spans, span, &format!("{indent}{next}"), out);
            }
            Child::Event(text) => out.push_str(&format!("{indent}{branch}{text}\n")),
        }
    }
}
