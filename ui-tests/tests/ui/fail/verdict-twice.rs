//! A branch output type that marks two fields `#[verdict]`: a branch
//! concludes one verdict.

use workflow_core::prelude::*;

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, schemars::JsonSchema, Verdict)]
pub struct Review {
    pub reviewer: String,
    #[verdict]
    pub approve: bool,
    #[verdict]
    pub severity: u8,
}

fn main() {}
