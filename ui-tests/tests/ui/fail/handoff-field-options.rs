//! Every field of a handoff is read and written as declared: a skipped or
//! defaulted ordinary field, a part that may not exist, a field the schema
//! leaves out are all refused.

use workflow_core::prelude::*;

#[derive(Debug, Clone, Copy, Default)]
pub struct Go;
impl workflow_core::Authority for Go {
    const NAME: &'static str = "Go";
}

#[handoff]
pub struct Plan {
    #[operation]
    pub op: Operation,
    #[authority]
    pub scope: Scope<Go>,
    #[evidence]
    #[cfg(any())]
    pub evidence: Vec<Evidence>,
    #[uncertainty]
    pub open: Vec<Uncertainty>,
    #[stop]
    pub stop: StopWhen,
    pub vpc_id: String,
    #[serde(skip)]
    pub override_vpc: Option<String>,
    #[serde(default)]
    pub env: String,
    #[schemars(skip)]
    pub note: String,
}

fn main() {}
