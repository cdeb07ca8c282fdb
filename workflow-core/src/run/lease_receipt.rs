//! The receipt's checks on the lease a handoff carries (its `#[authority]`
//! part): bounded, and never longer than what its sender works under. Called
//! from [`Runtime::check_receipt`](super::Runtime) after the scope is found
//! owned and live, in the order of the functions here.
//!
//! Only a lease from an agent is checked: the caller who starts a run lends
//! its input's authority for the run, which the run's hop cap bounds.

use std::borrow::Cow;

use crate::run::Runtime;
use crate::spec::{ContractView, Expiry, LeaseId, Node, RejectReason, Workflow};

/// Slack allowed between a lease's wall-clock expiry and the run's
/// deadline as the receipt computes it: the sender computes its lease from
/// a clock read earlier (`cx.time_left()`), and the two readings round
/// differently.
const DEADLINE_SLACK_MS: u64 = 1_000;

impl<W: Workflow> Runtime<'_, W> {
    /// Whether the transfer waiting for its receipt comes from an agent
    /// (not the caller's input into the entry).
    fn sent_by_agent(&self) -> bool {
        self.transcript
            .entries
            .last()
            .and_then(|e| W::GRAPH.edges.get(e.edge as usize))
            .is_some_and(|edge| matches!(edge.from, Node::Agent(_)))
    }

    /// The lease never expires and its authority is not declared
    /// open-ended.
    pub(super) fn check_lease_bounded(&self, contract: &ContractView<'_>) -> Option<RejectReason> {
        if contract.expires != Expiry::Never || contract.open_ended || !self.sent_by_agent() {
            return None;
        }
        Some(RejectReason::LeaseUnbounded {
            authority: Cow::Borrowed(contract.authority),
        })
    }

    /// The lease outlives its sender's own scope, the run's hop cap or the
    /// run's deadline (in that order). The sender's word is checked, never
    /// clamped: a lease it could not grant is rejected.
    pub(super) fn check_lease_within_grantor(
        &self,
        contract: &ContractView<'_>,
    ) -> Option<RejectReason> {
        if !self.sent_by_agent() {
            return None;
        }
        let lease = contract.expires;
        let outlives = |grantor: Expiry, bound: &'static str| {
            (!lease.within(grantor)).then_some(RejectReason::LeaseOutlivesGrantor {
                authority: Cow::Borrowed(contract.authority),
                lease,
                grantor,
                bound: Cow::Borrowed(bound),
            })
        };
        if let Some(reason) = self.grantor.and_then(|(_, g)| outlives(g, "sender_scope")) {
            return Some(reason);
        }
        if let Expiry::AtHop(hop) = lease
            && hop > self.max_hops
        {
            return outlives(Expiry::AtHop(self.max_hops), "hop_cap");
        }
        if let (Expiry::AtUnixMs(ms), Some(after_ms)) = (lease, self.limits.deadline_ms) {
            let deadline = unix_now_ms().saturating_add(after_ms.saturating_sub(self.elapsed_ms()));
            if ms > deadline.saturating_add(DEADLINE_SLACK_MS) {
                return outlives(Expiry::AtUnixMs(deadline), "deadline");
            }
        }
        None
    }
}

impl<W: Workflow> Runtime<'_, W> {
    /// The lease the transfer carries, or the one its sender worked under,
    /// was revoked (`Executor::revoke`).
    pub(super) fn check_lease_revoked(&self, contract: &ContractView<'_>) -> Option<RejectReason> {
        let revocations = self.shared.revocations.as_deref()?;
        let run_id = self.transcript.run_id;
        let revoked = |seq: usize| {
            revocations.is_revoked(LeaseId {
                run_id,
                seq: seq as u32,
            })
        };
        let pending = self.transcript.len().checked_sub(1)?;
        if revoked(pending) {
            return Some(RejectReason::LeaseRevoked {
                authority: Cow::Borrowed(contract.authority),
                seq: pending as u32,
            });
        }
        let (authority, _) = self.grantor?;
        if self.sent_by_agent() && revoked(self.turn_input) {
            return Some(RejectReason::LeaseRevoked {
                authority: Cow::Borrowed(authority),
                seq: self.turn_input as u32,
            });
        }
        None
    }
}

/// Wall-clock milliseconds since the Unix epoch.
fn unix_now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
