//! What a workflow publishes: the JSON Schemas of its payloads and records
//! with the drift check, the manifest and Mermaid diagram, tool definitions
//! in the Model Context Protocol's shape, and validation of JSON payloads
//! against the published schemas. Reads the `spec` layer (and the ledger's
//! and models' record types, to publish their schemas); holds no run state.

mod manifest;
mod mcp;
mod schema;
pub(crate) mod strict;
mod tool_versions;
pub(crate) mod validate;

pub use manifest::*;
pub use mcp::*;
pub use schema::*;
pub use strict::*;
pub use tool_versions::{ToolDigests, ToolPart, UnversionedChange};
