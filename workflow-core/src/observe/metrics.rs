//! Metrics following the OpenTelemetry GenAI semantic conventions (feature
//! `metrics`).
//!
//! The runtime records through the `opentelemetry` API, into instruments
//! made from the global meter provider: until an SDK provider is installed,
//! by your program or by `workflow_otel::install` (crate `workflow-otel`),
//! every record is a no-op. What is recorded:
//!
//! | instrument | kind, unit | when | attributes |
//! |---|---|---|---|
//! | [`OPERATION_DURATION`] | histogram, `s` | each agent turn, tool call and run | `gen_ai.operation.name`, `gen_ai.agent.name` or `gen_ai.tool.name` or `workflow.name`, `error.type` on failure |
//! | [`TOKEN_USAGE`] | histogram, `{token}` | [`record_token_usage`] | `gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.token.type`, the models, `gen_ai.agent.name` |
//! | [`HANDOFFS`] | counter, `{handoff}` | each decided receipt | `workflow.name`, `workflow.sender`, `workflow.receiver`, `workflow.receipt`, `workflow.reject_reason` (its code) when rejected |
//! | [`CONDITION_FAILURES`] | counter, `{failure}` | each failed pre-, post- or stop condition | `workflow.name`, `workflow.agent`, `workflow.condition.kind`, `workflow.condition`, and the edge (`workflow.sender`, `workflow.receiver`) for pre- and stop conditions |
//!
//! The histograms carry the bucket boundaries the conventions give
//! ([`DURATION_BOUNDARIES`], [`TOKEN_BOUNDARIES`]) as advice, which the
//! OpenTelemetry SDK applies unless a view overrides it.

use std::sync::{OnceLock, RwLock};

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Histogram, Meter};

/// `gen_ai.client.operation.duration`: how long an operation took, in seconds.
pub const OPERATION_DURATION: &str = "gen_ai.client.operation.duration";
/// `gen_ai.client.token.usage`: tokens a model reported, by `gen_ai.token.type`.
pub const TOKEN_USAGE: &str = "gen_ai.client.token.usage";
/// `workflow.handoffs`: decided receipts, by sender, receiver and outcome.
pub const HANDOFFS: &str = "workflow.handoffs";
/// `workflow.condition.failures`: failed conditions, by agent, edge and condition.
pub const CONDITION_FAILURES: &str = "workflow.condition.failures";
/// `workflow.audit.verdicts`: failed checks an executor in audit mode
/// recorded and let through, by sender, receiver and reject reason.
pub const AUDIT_VERDICTS: &str = "workflow.audit.verdicts";

/// The bucket boundaries of [`OPERATION_DURATION`], in seconds, as the
/// conventions give them.
pub const DURATION_BOUNDARIES: [f64; 14] = [
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];

/// The bucket boundaries of [`TOKEN_USAGE`], as the conventions give them.
pub const TOKEN_BOUNDARIES: [f64; 14] = [
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0,
    16777216.0, 67108864.0,
];

/// The instrumentation scope the instruments are made under.
pub const SCOPE: &str = "workflow-core";

/// Token counts a model reported for one operation (a chat call, say), to
/// record with [`record_token_usage`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenUsage<'a> {
    /// `gen_ai.operation.name`: `chat`, `text_completion`, `embeddings`, ...
    pub operation: &'a str,
    /// `gen_ai.provider.name`: `openai`, `anthropic`, `aws.bedrock`, ...
    pub provider: &'a str,
    /// `gen_ai.request.model`, if known.
    pub request_model: Option<&'a str>,
    /// `gen_ai.response.model`, if known.
    pub response_model: Option<&'a str>,
    /// `gen_ai.agent.name` of the agent whose turn used the tokens, if any.
    pub agent: Option<&'a str>,
    /// Input (prompt) tokens, if the model reported them.
    pub input_tokens: Option<u64>,
    /// Output (completion) tokens, if the model reported them.
    pub output_tokens: Option<u64>,
}

/// Records the tokens of one model operation in [`TOKEN_USAGE`]: one
/// measurement per reported token type (`input`, `output`).
pub fn record_token_usage(usage: &TokenUsage<'_>) {
    let mut attributes = vec![
        KeyValue::new("gen_ai.operation.name", usage.operation.to_owned()),
        KeyValue::new("gen_ai.provider.name", usage.provider.to_owned()),
    ];
    let optional = [
        ("gen_ai.request.model", usage.request_model),
        ("gen_ai.response.model", usage.response_model),
        ("gen_ai.agent.name", usage.agent),
    ];
    for (key, value) in optional {
        if let Some(value) = value {
            attributes.push(KeyValue::new(key, value.to_owned()));
        }
    }
    with_instruments(|i| {
        for (kind, tokens) in [
            ("input", usage.input_tokens),
            ("output", usage.output_tokens),
        ] {
            let Some(tokens) = tokens else { continue };
            attributes.push(KeyValue::new("gen_ai.token.type", kind));
            i.tokens.record(tokens, &attributes);
            attributes.pop();
        }
    });
}

/// Makes the instruments again, from the meter provider that is global now.
///
/// Instruments are made on first use from the provider global at that
/// moment (the API's no-op provider if none was installed yet); call this
/// after `opentelemetry::global::set_meter_provider` if runs were recorded
/// before. `workflow_otel::install` and `workflow_otel::pipeline` call it.
pub fn use_global_meter_provider() {
    if let Ok(mut instruments) = INSTRUMENTS.write() {
        *instruments = None;
    }
}

/// The runtime's instruments.
pub(crate) struct Instruments {
    pub(crate) duration: Histogram<f64>,
    pub(crate) tokens: Histogram<u64>,
    pub(crate) handoffs: Counter<u64>,
    pub(crate) condition_failures: Counter<u64>,
    pub(crate) audit_verdicts: Counter<u64>,
}

impl Instruments {
    fn new(meter: &Meter) -> Self {
        Instruments {
            duration: meter
                .f64_histogram(OPERATION_DURATION)
                .with_unit("s")
                .with_description("GenAI operation duration.")
                .with_boundaries(DURATION_BOUNDARIES.to_vec())
                .build(),
            tokens: meter
                .u64_histogram(TOKEN_USAGE)
                .with_unit("{token}")
                .with_description("Number of input and output tokens used.")
                .with_boundaries(TOKEN_BOUNDARIES.to_vec())
                .build(),
            handoffs: meter
                .u64_counter(HANDOFFS)
                .with_unit("{handoff}")
                .with_description("Handoffs whose receipt was decided, by outcome.")
                .build(),
            condition_failures: meter
                .u64_counter(CONDITION_FAILURES)
                .with_unit("{failure}")
                .with_description("Pre-, post- and stop conditions that failed.")
                .build(),
            audit_verdicts: meter
                .u64_counter(AUDIT_VERDICTS)
                .with_unit("{verdict}")
                .with_description("Failed checks recorded and let through in audit mode.")
                .build(),
        }
    }
}

static INSTRUMENTS: RwLock<Option<Instruments>> = RwLock::new(None);

/// Runs `record` with the instruments, making them first if needed. A
/// poisoned lock (a panic while making them) drops the measurement: a
/// metric is never worth a panic.
pub(crate) fn with_instruments(record: impl FnOnce(&Instruments)) {
    if let Ok(instruments) = INSTRUMENTS.read()
        && let Some(instruments) = instruments.as_ref()
    {
        record(instruments);
        return;
    }
    if let Ok(mut instruments) = INSTRUMENTS.write() {
        record(instruments.get_or_insert_with(|| {
            Instruments::new(&opentelemetry::global::meter_with_scope(scope()))
        }));
    }
}

/// The instrumentation scope the runtime's instruments are made under:
/// [`SCOPE`], with this crate's version. Make the tracer of an
/// OpenTelemetry layer with it (`tracer_with_scope(scope())`, as
/// `workflow-otel` does) so that spans and metrics carry the same scope.
pub fn scope() -> opentelemetry::InstrumentationScope {
    opentelemetry::InstrumentationScope::builder(SCOPE)
        .with_version(env!("CARGO_PKG_VERSION"))
        .build()
}

/// Plumbing for `workflow-otel`: reads the OpenTelemetry trace and span
/// ids of the current `tracing` span, as lowercase hex (32 and 16 digits),
/// `None` when it is not traced; see `link_trace_ids`.
#[doc(hidden)]
pub type TraceIds = fn() -> Option<(String, String)>;

static TRACE_IDS: OnceLock<TraceIds> = OnceLock::new();

/// Plumbing for `workflow-otel`: makes ledger records carry the trace and
/// span they were written in (`LedgerRecord::trace_id` and `span_id`).
///
/// The runtime spans are `tracing` spans; only the layer that turns them
/// into OpenTelemetry spans (`tracing-opentelemetry`) knows their ids, and
/// this crate does not depend on it: `read` does. The first `read` set
/// stays (one layer crate per program); it is called once per record
/// written, with feature `tracing` on. Call
/// `workflow_otel::link_ledger_records` rather than this.
#[doc(hidden)]
pub fn link_trace_ids(read: TraceIds) {
    // Set already: by the same crate (a second `install`), or by another
    // one, whose ids are as good.
    let _ = TRACE_IDS.set(read);
}

/// The trace and span ids of the current span, empty without a
/// [`link_trace_ids`] reader or outside a traced span.
#[cfg(feature = "tracing")]
pub(crate) fn trace_ids() -> (String, String) {
    TRACE_IDS.get().and_then(|read| read()).unwrap_or_default()
}
