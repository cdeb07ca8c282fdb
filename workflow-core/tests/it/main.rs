//! The integration tests of `workflow-core`, one test binary: each file a
//! module, the shared workflows and assertions in `fixtures`. One binary
//! links once where a binary per file linked the crate and its test
//! dependencies once each.
//!
//! `policy.rs`, `otel_export.rs` and `otel_memory.rs` stay binaries of
//! their own beside this one (they are moving to crates of their own).

// `pub`, as each file's items were at the root of a binary of its own:
// what a file declares `pub` (a workflow whose schema alone is read) is
// not dead code.
pub mod fixtures;

pub mod agent_view;
pub mod audit;
pub mod branch_transfers;
pub mod checkpoint;
pub mod citations;
pub mod contract_parts;
pub mod direct_writers;
pub mod empty_ok;
pub mod enforcement;
pub mod entry;
pub mod guards;
pub mod journal_checked;
pub mod layers;
pub mod lease_bounds;
pub mod lease_renewal;
pub mod lease_revocation;
pub mod lease_revocation_recorded;
pub mod leased_runs;
pub mod leases;
pub mod ledger;
pub mod mermaid;
pub mod models;
pub mod outcome;
pub mod parallel;
pub mod parallel_dsl;
pub mod parallel_map;
pub mod parallel_nested;
pub mod parallel_replay;
pub mod parallel_resume;
pub mod parallel_rounds;
pub mod payload_limits;
pub mod pinned_root;
pub mod pins;
pub mod post_context;
pub mod protocol;
pub mod receipts;
pub mod replay;
pub mod resumed_tool_calls;
pub mod schema_identity;
pub mod schemas;
pub mod session;
pub mod short_contract;
pub mod stops;
pub mod stream;
pub mod telemetry;
pub mod tool_loop;
pub mod tool_versions;
pub mod turn_view;
pub mod unscoped;
