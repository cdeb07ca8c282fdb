//! The models built from the parsed input, before any check.

pub mod handoff;
pub mod value;
pub mod workflow;
