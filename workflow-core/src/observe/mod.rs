//! What a run tells the outside while it runs: `tracing` spans and events
//! (feature `tracing`) and OpenTelemetry metrics (feature `metrics`), both
//! following the GenAI semantic conventions. Reads the `spec` layer only;
//! without the features every call site is an empty inline function.

#[cfg(feature = "metrics")]
pub(crate) mod metrics;
pub(crate) mod telemetry;
