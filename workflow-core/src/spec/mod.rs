//! The bottom layer: what crosses a seam. The contract parts of a handoff,
//! the graph's static description, receipts and reject reasons, the records
//! of transfers, turns, tool and model calls, the errors both sides read, and
//! the traits a workflow implements (`Workflow`, `Agent`, `Route`, `Tool`).
//!
//! Nothing here imports another layer of the crate, with one exception kept
//! on purpose: the traits in [`workflow`] name the run layer's `Runtime` and
//! `Context` in their method signatures, because a generated turn drives the
//! runtime. Start reading here.

mod branch;
mod budget;
mod citation;
mod contract;
mod contract_field;
mod error;
mod graph;
mod invariant;
mod journal;
mod lease_act;
mod mode;
mod model_call;
mod record;
mod revocation;
mod schema_set;
mod standard_format;
mod tool;
mod verdict;
mod workflow;

pub use branch::*;
pub use budget::*;
pub use citation::*;
pub use contract::*;
pub use contract_field::*;
pub use error::*;
pub use graph::*;
pub use invariant::*;
pub use journal::*;
pub use lease_act::*;
pub use mode::*;
pub use model_call::*;
pub use record::*;
pub use revocation::*;
pub use schema_set::*;
pub use standard_format::{STANDARD_FORMATS, is_standard_format};
pub use tool::*;
pub use verdict::*;
pub use workflow::*;
