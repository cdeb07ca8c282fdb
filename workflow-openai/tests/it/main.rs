//! The integration tests of the OpenAI-compatible model, one test binary
//! (each file a module), like the other crates'.

// `pub`, as each file's items were at the root of a binary of its own:
// what a file declares `pub` (a workflow whose schema alone is read) is
// not dead code.
pub mod http;
pub mod schema_form;
pub mod tools;
