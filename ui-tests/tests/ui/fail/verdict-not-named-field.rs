//! `#[verdict]` on something that is not a named field: a tuple struct's
//! field, and an enum.

use workflow_core::prelude::*;

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, schemars::JsonSchema, Verdict)]
pub struct Review(pub String, #[verdict] pub bool);

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, schemars::JsonSchema, Verdict)]
pub enum Call {
    Approve,
    Block,
}

fn main() {}
