//! How an executor treats a run-time check that fails: enforce it (the
//! default) or only record it (audit mode, for adopting the library on a
//! workflow that already runs).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::spec::RejectReason;

/// How an executor treats a failed run-time check, chosen in code with
/// `Executor::with_mode` (never read from the environment) and recorded in
/// every record of the run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// A failed check stops the transfer (rejects, escalates or returns it
    /// as the receiver declares).
    #[default]
    Enforce,
    /// Every check still runs, but a failed check that can be audited (see
    /// [`RejectReason::auditable`]) is recorded as a verdict on the
    /// transfer's receipt ([`Receipt::Audited`](crate::Receipt::Audited))
    /// and the transfer goes through.
    Audit,
}

impl Mode {
    /// Whether this is [`Mode::Enforce`] (the default, not written in records).
    pub fn is_enforce(&self) -> bool {
        *self == Mode::Enforce
    }
}

impl RejectReason {
    /// Whether audit mode may let a transfer with this reason through and
    /// record it instead. Not auditable, so stopped in both modes: what
    /// bounds the run (the hop cap, a loop bound), a payload that cannot be
    /// recorded or read as its type (too deep, non-finite, a schema
    /// mismatch), and a person's rejection.
    pub fn auditable(&self) -> bool {
        !matches!(
            self,
            RejectReason::HopCap { .. }
                | RejectReason::LoopBound { .. }
                | RejectReason::TooDeep { .. }
                | RejectReason::NonFinite { .. }
                | RejectReason::SchemaMismatch { .. }
                | RejectReason::HumanRejected { .. }
        )
    }
}
