//! The integration tests of the examples, one test binary: each file a
//! module, the shared helpers in `fixtures`. The crash tests still run the
//! example binaries (`CARGO_BIN_EXE_*`) as children and kill them.

// `pub`, as each file's items were at the root of a binary of its own:
// what a file declares `pub` (a workflow whose schema alone is read) is
// not dead code.
pub mod fixtures;

pub mod ablation;
pub mod ajv;
pub mod campaign;
pub mod canaries;
pub mod crash;
pub mod crash_tools;
pub mod deploy_guard;
pub mod fanout_bench;
pub mod hand_written;
pub mod journal_tamper;
pub mod mcp_spec;
pub mod model_tools;
pub mod model_triage;
pub mod parallel_review;
pub mod policy_gate;
pub mod published_schemas;
pub mod replay;
pub mod sqlite_ledger;
pub mod strict_forms;
pub mod ticket_triage;
