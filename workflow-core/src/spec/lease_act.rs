//! What a turn does with leases besides using them: asking for its own
//! lease to be renewed ([`LeaseAct::Renewal`], with the runtime's answer)
//! and revoking a lease its agent granted ([`LeaseAct::Revocation`]);
//! recorded with the turn ([`TurnRecord::leases`](crate::TurnRecord)), so
//! covered by the hash chain. And an operator's revocation as a ledger
//! keeps it ([`StoredRevocation`]), so that it survives a restart.

use std::borrow::Cow;
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::spec::{Expiry, LeaseId};

/// A turn's act on a lease, recorded with the turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "act", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum LeaseAct {
    /// The turn asked for its own lease to be renewed
    /// (`cx.request_renewal(..)`); the runtime answered from the grantor's
    /// recorded bounds.
    Renewal {
        /// The transfer record that granted the lease.
        lease: u32,
        /// The authority leased.
        authority: Cow<'static, str>,
        /// The lease's expiry when it was asked.
        was: Expiry,
        /// The expiry asked for.
        asked: Expiry,
        /// The runtime's answer.
        outcome: RenewalOutcome,
    },
    /// The turn revoked a lease its agent had granted (`cx.revoke(..)`).
    Revocation {
        /// The transfer record that granted the lease.
        lease: u32,
    },
}

/// The answer to a renewal request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum RenewalOutcome {
    /// The lease now expires when asked.
    Granted,
    /// The lease is unchanged, for this reason.
    Refused(RenewalRefused),
}

/// Why a renewal was refused: the runtime grants one only within what the
/// lease's grantor itself worked under, by the same rules as the receipt
/// (`lease_outlives_grantor`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, thiserror::Error)]
#[serde(tag = "code", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum RenewalRefused {
    /// The turn works under no lease (the entry's input lends nothing to
    /// renew, or a hand-written agent's input has no contract).
    #[error("the turn works under no lease to renew")]
    NoLease,
    /// The lease, or one it was granted under, was revoked.
    #[error("the lease granted at record {seq} was revoked")]
    Revoked {
        /// The revoked lease's transfer record.
        seq: u32,
    },
    /// The renewal asked for no expiry (`Expiry::Never`): a renewal says
    /// when it ends.
    #[error("a renewal must say when it ends (`Expiry::AtHop` or `Expiry::AtUnixMs`)")]
    Unbounded,
    /// The lease had already expired: a renewal extends a live lease, it
    /// does not bring back an expired one.
    #[error("the lease expired ({expires:?}) before its renewal was asked")]
    Expired {
        /// Its expiry.
        expires: Expiry,
    },
    /// The renewal would outlive what the lease's grantor works under: its
    /// own scope (`bound: "sender_scope"`), the run's hop cap (`"hop_cap"`)
    /// or the run's deadline (`"deadline"`).
    #[error("the renewal ({asked:?}) would outlive the grantor's bound ({bound}: {grantor:?})")]
    OutlivesGrantor {
        /// The expiry asked for.
        asked: Expiry,
        /// The bound it would outlive.
        grantor: Expiry,
        /// Whose bound: `sender_scope`, `hop_cap` or `deadline`.
        bound: Cow<'static, str>,
    },
}

/// Why `cx.revoke(lease)` was refused: only the agent that granted a lease
/// (or an operator, `Executor::revoke`) can revoke it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, thiserror::Error)]
#[serde(tag = "code", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum RevokeRefused {
    /// The lease is of another run.
    #[error("lease {lease:?} is of another run than this one ({run_id})")]
    OtherRun {
        /// The lease named.
        lease: LeaseId,
        /// This run.
        run_id: u64,
    },
    /// No transfer to an agent was recorded at `seq` before this turn: no
    /// lease was granted there.
    #[error("no lease was granted at record {seq} of this run")]
    NoSuchLease {
        /// The record named.
        seq: u32,
    },
    /// The lease was granted by someone else.
    #[error("the lease granted at record {seq} was granted by `{granted_by}`, not by this agent")]
    NotGrantor {
        /// The record named.
        seq: u32,
        /// Who granted it (an agent's name, or `START` for the caller).
        granted_by: Cow<'static, str>,
    },
}

/// An operator's revocation (`Executor::revoke`) as a ledger keeps it
/// ([`Ledger::append_revocation`](crate::ledger::Ledger::append_revocation)):
/// a run resumed from the ledger, on any process, applies it again, and a
/// replay applies it after the record it followed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StoredRevocation {
    /// The lease revoked.
    pub lease: LeaseId,
    /// Who revoked it (the executor's holder name).
    pub by: String,
    /// The run's last committed record when it was revoked (`None`: the
    /// run had none): a replay applies the revocation from the record
    /// after it on.
    pub after: Option<u32>,
    /// When, in ms since the Unix epoch.
    pub at_unix_ms: u64,
}

impl fmt::Display for LeaseAct {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LeaseAct::Renewal {
                lease,
                authority,
                was,
                asked,
                outcome,
            } => {
                write!(
                    f,
                    "renewal of the lease on `{authority}` (#{lease}) from {was:?} to {asked:?}: "
                )?;
                match outcome {
                    RenewalOutcome::Granted => f.write_str("granted"),
                    RenewalOutcome::Refused(reason) => write!(f, "refused: {reason}"),
                }
            }
            LeaseAct::Revocation { lease } => write!(f, "revoked the lease granted at #{lease}"),
        }
    }
}

/// The scope a transfer's sender worked under when it sent it (its own
/// lease: authority and expiry, a renewal included): recorded with the
/// transfer ([`LedgerRecord::sender_scope`](crate::ledger::LedgerRecord)),
/// so that a run resumed with that transfer waiting for its receipt checks
/// the lease it carries against the sender's own, as the run that made it
/// would have.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SenderScope {
    /// The authority of the sender's lease.
    pub authority: Cow<'static, str>,
    /// When it expires.
    pub expires: Expiry,
}
