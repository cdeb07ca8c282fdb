//! One call to export the traces and metrics of workflow-core runs over
//! OTLP/HTTP.
//!
//! [`install`] builds an OTLP/HTTP (protobuf) exporter for spans and one
//! for metrics, their SDK providers, makes the meter provider global (the
//! runtime's [`metrics`](workflow_core::metrics) record into it) and installs a
//! `tracing` subscriber whose `tracing-opentelemetry` layer turns the
//! runtime's spans into OpenTelemetry spans. The [`OtelGuard`] it returns
//! flushes and shuts both providers down when dropped: keep it alive for as
//! long as the program runs. Ledger records written inside a traced run
//! carry its trace and span ids ([`link_ledger_records`]).
//!
//! This crate turns on workflow-core's `tracing` and `metrics` features:
//! the runtime's spans and instruments are what it exports.
//!
//! ```no_run
//! use workflow_otel::OtelConfig;
//!
//! let _telemetry = workflow_otel::install(OtelConfig {
//!     endpoint: "http://localhost:4318".into(),
//!     service_name: "deploy-bot".into(),
//! })
//! .expect("the exporter and the subscriber are installed");
//! // ... run workflows; everything is flushed when `_telemetry` drops.
//! ```
//!
//! The exporters send from the SDK's own threads with a small blocking HTTP
//! client (`ureq`, plain HTTP: a collector beside the program); TLS is the
//! collector's business, or enable `ureq`'s `rustls` feature in your
//! program to reach an `https://` endpoint.

#![warn(missing_docs)]

use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use tracing_subscriber::layer::SubscriberExt;

/// Where to send telemetry and under which service name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtelConfig {
    /// The collector's OTLP/HTTP base URL, such as `http://localhost:4318`:
    /// spans go to `{endpoint}/v1/traces`, metrics to `{endpoint}/v1/metrics`.
    /// Empty: the `OTEL_EXPORTER_OTLP_*` environment variables decide, else
    /// `http://localhost:4318`.
    pub endpoint: String,
    /// The `service.name` resource attribute every span and metric carries.
    pub service_name: String,
}

impl Default for OtelConfig {
    /// `http://localhost:4318`, service `workflow`.
    fn default() -> Self {
        OtelConfig {
            endpoint: "http://localhost:4318".into(),
            service_name: "workflow".into(),
        }
    }
}

/// What went wrong installing or flushing the exporters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OtelError {
    /// An exporter could not be built (a bad endpoint, say).
    #[error("the OTLP exporter could not be built: {0}")]
    Exporter(String),
    /// A global `tracing` subscriber was already set: use [`pipeline`] and
    /// add [`OtelGuard::layer`] to yours.
    #[error(
        "a global tracing subscriber is already set ({0}); use `workflow_otel::pipeline` and add `OtelGuard::layer` to it"
    )]
    Subscriber(String),
    /// Flushing or shutting down a provider failed (the collector did not
    /// answer, say).
    #[error("flushing the telemetry failed: {0}")]
    Flush(String),
}

/// How long one export may take.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// The tracer and meter providers; flushes and shuts them down when dropped.
#[must_use = "dropping the guard shuts the exporters down at once"]
pub struct OtelGuard {
    tracer_provider: SdkTracerProvider,
    meter_provider: SdkMeterProvider,
    shut_down: bool,
}

impl std::fmt::Debug for OtelGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OtelGuard")
            .field("shut_down", &self.shut_down)
            .finish_non_exhaustive()
    }
}

impl OtelGuard {
    /// The `tracing-opentelemetry` layer exporting through this guard's
    /// tracer, to add to a subscriber of your own (it also calls
    /// [`link_ledger_records`]).
    pub fn layer<S>(&self) -> tracing_opentelemetry::OpenTelemetryLayer<S, SdkTracer>
    where
        S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    {
        link_ledger_records();
        tracing_opentelemetry::layer().with_tracer(
            self.tracer_provider
                .tracer_with_scope(workflow_core::metrics::scope()),
        )
    }

    /// The tracer provider (to make tracers of your own).
    pub fn tracer_provider(&self) -> &SdkTracerProvider {
        &self.tracer_provider
    }

    /// The meter provider (to make meters of your own).
    pub fn meter_provider(&self) -> &SdkMeterProvider {
        &self.meter_provider
    }

    /// Exports every span ended and every metric recorded so far, and waits
    /// until the collector has answered.
    pub fn flush(&self) -> Result<(), OtelError> {
        let spans = self.tracer_provider.force_flush();
        let metrics = self.meter_provider.force_flush();
        spans
            .and(metrics)
            .map_err(|e| OtelError::Flush(e.to_string()))
    }

    /// Flushes, then shuts both providers down; what [`Drop`] does, with
    /// the error reported.
    pub fn shutdown(mut self) -> Result<(), OtelError> {
        self.shut_down = true;
        let spans = self.tracer_provider.shutdown();
        let metrics = self.meter_provider.shutdown();
        spans
            .and(metrics)
            .map_err(|e| OtelError::Flush(e.to_string()))
    }
}

impl Drop for OtelGuard {
    fn drop(&mut self) {
        if !self.shut_down {
            // Nowhere to report a failure from a drop: `shutdown` reports it.
            let _ = self.tracer_provider.shutdown();
            let _ = self.meter_provider.shutdown();
        }
    }
}

/// Installs the exporters and a global `tracing` subscriber (a registry
/// with the `tracing-opentelemetry` layer); see the [module](self) docs.
pub fn install(config: OtelConfig) -> Result<OtelGuard, OtelError> {
    let guard = providers(&config)?;
    let subscriber = tracing_subscriber::registry().with(guard.layer());
    tracing::subscriber::set_global_default(subscriber)
        .map_err(|e| OtelError::Subscriber(e.to_string()))?;
    make_global(&guard);
    Ok(guard)
}

/// Builds the exporters and providers and makes the meter provider global,
/// but leaves the `tracing` subscriber to you: add [`OtelGuard::layer`] to
/// it (beside a `fmt` layer, say).
pub fn pipeline(config: &OtelConfig) -> Result<OtelGuard, OtelError> {
    let guard = providers(config)?;
    make_global(&guard);
    Ok(guard)
}

fn make_global(guard: &OtelGuard) {
    opentelemetry::global::set_tracer_provider(guard.tracer_provider.clone());
    opentelemetry::global::set_meter_provider(guard.meter_provider.clone());
    workflow_core::metrics::use_global_meter_provider();
    link_ledger_records();
}

/// Makes the ledger records written inside a traced run carry the trace and
/// span they were written in (`LedgerRecord::trace_id` and `span_id`), read
/// from the `tracing-opentelemetry` layer.
///
/// [`install`], [`pipeline`] and [`OtelGuard::layer`] call it; call it
/// yourself when you install a `tracing-opentelemetry` layer of your own
/// (with the SDK's in-memory exporter in a test, say). Calling it again
/// does nothing.
pub fn link_ledger_records() {
    workflow_core::metrics::link_trace_ids(current_trace_ids);
}

/// The OpenTelemetry trace and span ids of the current `tracing` span, if
/// a `tracing-opentelemetry` layer traces it.
fn current_trace_ids() -> Option<(String, String)> {
    use opentelemetry::trace::TraceContextExt;
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    let cx = tracing::Span::current().context();
    let span = cx.span();
    let ids = span.span_context();
    ids.is_valid()
        .then(|| (ids.trace_id().to_string(), ids.span_id().to_string()))
}

fn providers(config: &OtelConfig) -> Result<OtelGuard, OtelError> {
    let resource = Resource::builder()
        .with_service_name(config.service_name.clone())
        .build();
    let exporter = |e: opentelemetry_otlp::ExporterBuildError| OtelError::Exporter(e.to_string());

    let mut spans = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(Blocking::new())
        .with_protocol(Protocol::HttpBinary)
        .with_timeout(EXPORT_TIMEOUT);
    if let Some(url) = signal_url(&config.endpoint, "v1/traces") {
        spans = spans.with_endpoint(url);
    }
    let mut metrics = opentelemetry_otlp::MetricExporter::builder()
        .with_http()
        .with_http_client(Blocking::new())
        .with_protocol(Protocol::HttpBinary)
        .with_timeout(EXPORT_TIMEOUT);
    if let Some(url) = signal_url(&config.endpoint, "v1/metrics") {
        metrics = metrics.with_endpoint(url);
    }
    let tracer_provider = SdkTracerProvider::builder()
        .with_batch_exporter(spans.build().map_err(exporter)?)
        .with_resource(resource.clone())
        .build();
    let meter_provider = SdkMeterProvider::builder()
        .with_periodic_exporter(metrics.build().map_err(exporter)?)
        .with_resource(resource)
        .build();
    Ok(OtelGuard {
        tracer_provider,
        meter_provider,
        shut_down: false,
    })
}

/// `{base}/{path}`, or `None` for an empty base (the environment decides).
fn signal_url(base: &str, path: &str) -> Option<String> {
    let base = base.trim().trim_end_matches('/');
    (!base.is_empty()).then(|| format!("{base}/{path}"))
}

/// The largest collector answer read (OTLP answers are a few bytes).
const MAX_RESPONSE_BYTES: u64 = 4 * 1024 * 1024;

/// A blocking HTTP client for the exporters: the SDK exports from its own
/// threads, so no async runtime is needed, nor the weight of one.
#[derive(Debug, Clone)]
struct Blocking(ureq::Agent);

impl Blocking {
    fn new() -> Self {
        let config = ureq::Agent::config_builder()
            .timeout_global(Some(EXPORT_TIMEOUT))
            // The exporter reads the status itself (and retries on 429/503).
            .http_status_as_error(false)
            .build();
        Blocking(ureq::Agent::new_with_config(config))
    }
}

#[async_trait::async_trait]
impl opentelemetry_http::HttpClient for Blocking {
    async fn send_bytes(
        &self,
        request: opentelemetry_http::Request<opentelemetry_http::Bytes>,
    ) -> Result<
        opentelemetry_http::Response<opentelemetry_http::Bytes>,
        opentelemetry_http::HttpError,
    > {
        let (parts, body) = request.into_parts();
        let request = opentelemetry_http::Request::from_parts(parts, body.as_ref());
        let mut response = self.0.run(request)?;
        let bytes = response
            .body_mut()
            .with_config()
            .limit(MAX_RESPONSE_BYTES)
            .read_to_vec()?;
        let (parts, _) = response.into_parts();
        Ok(opentelemetry_http::Response::from_parts(
            parts,
            opentelemetry_http::Bytes::from(bytes),
        ))
    }
}

/// The book's chapter on observability, its code blocks compiled and run
/// as doctests.
#[cfg(doctest)]
pub mod book {
    #[doc = include_str!("../../book/src/observability.md")]
    pub struct Observability;
}

#[cfg(test)]
mod tests {
    use super::signal_url;

    #[test]
    fn signal_urls_append_the_path_once() {
        assert_eq!(
            signal_url("http://c:4318", "v1/traces").as_deref(),
            Some("http://c:4318/v1/traces")
        );
        assert_eq!(
            signal_url("http://c:4318/", "v1/metrics").as_deref(),
            Some("http://c:4318/v1/metrics")
        );
        assert_eq!(signal_url(" ", "v1/traces"), None);
    }
}
