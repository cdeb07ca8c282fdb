//! The models built from the parsed input, before any check.

pub mod agent;
pub mod handoff;
pub mod syntax;
pub mod tool;
pub mod value;
pub mod workflow;
