//! Revoking a lease: which lease ([`LeaseId`]), and the registry of the
//! leases revoked ([`Revocations`]) that an executor's runs consult at each
//! receipt and each tool call.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A lease, named by where it was granted: the transfer record `seq` of run
/// `run_id` (a handoff carries exactly one lease, its `#[authority]` part).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LeaseId {
    /// The run.
    pub run_id: u64,
    /// The sequence number of the transfer record that granted the lease.
    pub seq: u32,
}

/// The leases revoked by an operator (`Executor::revoke`): a revoked lease
/// is rejected at the next receipt of its run
/// ([`RejectReason::LeaseRevoked`](crate::RejectReason)) and refuses the
/// next tool call made under it. Share one registry between executors with
/// `Executor::with_revocations`.
#[derive(Debug, Default)]
pub struct Revocations {
    /// Set once anything is revoked: a run with no revocation pays one
    /// atomic load per check.
    any: AtomicBool,
    revoked: Mutex<Vec<LeaseId>>,
}

impl Revocations {
    /// Revokes `lease`; revoking it twice changes nothing.
    pub fn revoke(&self, lease: LeaseId) {
        let mut revoked = self.revoked.lock().unwrap_or_else(|p| p.into_inner());
        if !revoked.contains(&lease) {
            revoked.push(lease);
        }
        self.any.store(true, Ordering::Release);
    }

    /// Whether nothing was ever revoked here.
    #[inline]
    pub fn is_empty(&self) -> bool {
        !self.any.load(Ordering::Acquire)
    }

    /// Whether `lease` is revoked.
    pub fn is_revoked(&self, lease: LeaseId) -> bool {
        if !self.any.load(Ordering::Acquire) {
            return false;
        }
        self.revoked
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(&lease)
    }
}
