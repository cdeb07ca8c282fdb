//! The ledger's link to a trace goes through `metrics::link_trace_ids`: the
//! core reads no OpenTelemetry context itself, the layer's crate
//! (`workflow-otel`) gives the reader. A reader of our own stands in for it
//! here; the real one is tested in `workflow-otel/tests/otel_memory.rs`.
//!
//! One test in this file: the reader is set once per process.

mod traced;

use workflow_core::metrics;

const TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const SPAN: &str = "b7ad6b7169203331";

fn fixed_ids() -> Option<(String, String)> {
    Some((TRACE.to_owned(), SPAN.to_owned()))
}

#[test]
fn records_carry_the_ids_of_the_linked_reader_and_none_before_it() {
    let (_, unlinked) = traced::run(3);
    assert!(!unlinked.is_empty());
    assert!(
        unlinked
            .iter()
            .all(|r| r.trace_id.is_empty() && r.span_id.is_empty()),
        "no reader, no link: {unlinked:#?}"
    );

    metrics::link_trace_ids(fixed_ids);
    let (_, linked) = traced::run(3);
    assert_eq!(linked.len(), unlinked.len());
    for r in &linked {
        assert_eq!((r.trace_id.as_str(), r.span_id.as_str()), (TRACE, SPAN));
    }
}
