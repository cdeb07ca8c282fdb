//! The rules: one `check_*` function per rule, all reporting into a `Ctxt`.

pub mod contract;
pub mod forbidden;
pub mod item;
pub mod parallel;
pub mod workflow;
