//! A type that derives `Verdict` but marks no field `#[verdict]`.

use workflow_core::prelude::*;

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, schemars::JsonSchema, Verdict)]
pub struct Review {
    pub reviewer: String,
    pub approve: bool,
}

fn main() {}
