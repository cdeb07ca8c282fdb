//! The integration tests of the `workflow` command line, one test binary:
//! each file a module, the shared helpers in `fixtures`.

// `pub`, as each file's items were at the root of a binary of its own:
// what a file declares `pub` (a workflow whose schema alone is read) is
// not dead code.
pub mod fixtures;

pub mod audit;
pub mod branches;
pub mod checkpoint;
pub mod cli;
pub mod hostile_payloads;
pub mod leases;
pub mod read_only;
pub mod replay_schema;
pub mod trace_link;
