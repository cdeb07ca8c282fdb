//! The models built from the parsed input, before any check.

pub mod handoff;
pub mod workflow;
