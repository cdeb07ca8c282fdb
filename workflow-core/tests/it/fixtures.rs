//! What more than one test module uses: the flow and the SDK pipelines the
//! OpenTelemetry tests share (kept beside `otel_memory.rs` and
//! `otel_export.rs`, which include them too), and the assertions on
//! rejections.

/// The flow the telemetry tests run (planner -> doer, which calls `double`).
#[path = "../traced/mod.rs"]
pub mod traced;

/// The OpenTelemetry SDK with in-memory exporters, installed once per binary.
#[allow(dead_code)] // `otel_memory.rs` uses more of it than this binary does.
#[path = "../in_memory/mod.rs"]
pub mod in_memory;
