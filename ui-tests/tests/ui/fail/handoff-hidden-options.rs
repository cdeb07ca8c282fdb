//! Serde options that would let a part be dropped, or the whole payload be
//! read another way, are refused wherever they hide: in `cfg_attr`, in a
//! container option such as `from`, in a field option such as `with`.

use workflow_core::prelude::*;

#[derive(serde::Deserialize)]
pub struct Wire {
    pub n: u32,
}

#[handoff]
#[serde(from = "Wire")]
pub struct Task {
    #[operation]
    pub op: Operation,
    #[authority]
    pub scope: Scope<Go>,
    #[evidence]
    #[cfg_attr(all(), serde(default))]
    pub evidence: Vec<Evidence>,
    #[uncertainty]
    #[serde(with = "uncertain")]
    pub open: Vec<Uncertainty>,
    #[stop]
    pub stop: StopWhen,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct Go;
impl workflow_core::Authority for Go {
    const NAME: &'static str = "Go";
}

fn main() {}
