//! The receipt's checks on the lease a handoff carries (its `#[authority]`
//! part): not revoked (nor any lease it derives from), bounded, and never
//! longer than what its sender works under (as recorded with the transfer,
//! so the same after a resume); and, at the end of a turn, the turn's lease
//! acts taken for its record (`run/lease_book.rs` holds the rest). Called
//! from [`Runtime::check_receipt`](super::Runtime) after the scope is found
//! owned and live, in the order of the functions here.
//!
//! Only a lease from an agent is checked: the caller who starts a run lends
//! its input's authority for the run, which the run's hop cap bounds.

use std::borrow::Cow;

use crate::run::Runtime;
use std::sync::atomic::Ordering;

use crate::run::{outlives_grantor, unix_now_ms};
use crate::spec::{ContractView, Expiry, LeaseAct, Node, RejectReason, Workflow};

impl<W: Workflow> Runtime<'_, W> {
    /// Whether the transfer waiting for its receipt comes from an agent
    /// (not the caller's input into the entry): looked up once per receipt
    /// for the checks below.
    #[inline]
    pub(super) fn sent_by_agent(&self) -> bool {
        self.transcript
            .entries
            .last()
            .and_then(|e| W::GRAPH.edges.get(e.edge as usize))
            .is_some_and(|edge| matches!(edge.from, Node::Agent(_)))
    }

    /// The lease outlives its sender's own scope (as recorded with the
    /// transfer, so the same after a resume), the run's hop cap or the
    /// run's deadline (in that order). The sender's word is checked, never
    /// clamped: a lease it could not grant is rejected.
    /// `by_agent`: whether an agent sent the transfer
    /// ([`sent_by_agent`](Self::sent_by_agent)).
    // Inlined for the case nearly every receipt is (a lease within its
    // sender's, under the hop cap, in a run with no deadline), the rest
    // called: measured, the call cost a transition about 20 instructions.
    #[inline(always)]
    pub(super) fn check_lease_within_grantor(
        &self,
        contract: &ContractView<'_>,
        by_agent: bool,
    ) -> Option<RejectReason> {
        if !by_agent {
            return None;
        }
        let lease = contract.expires;
        let pending = self.transcript.len().checked_sub(1)?;
        if self.limits.deadline_ms.is_none()
            && self.transcript.within_sender_scope(pending, lease)
            && !matches!(lease, Expiry::AtHop(hop) if hop > self.max_hops)
        {
            return None;
        }
        let grantor = self.transcript.sender_scope(pending).map(|(_, e)| e);
        self.lease_outlives_grantor(contract.authority, lease, grantor)
    }

    /// [`check_lease_within_grantor`](Self::check_lease_within_grantor)
    /// against the sender's scope `grantor`, the hop cap and the run's
    /// deadline.
    #[inline(never)]
    // Given the view's values, not the view: a view passed to a call is
    // built in memory at every receipt (measured: about 20 instructions a
    // transition), one kept to the turn's own code is not.
    fn lease_outlives_grantor(
        &self,
        authority: &'static str,
        lease: Expiry,
        grantor: Option<Expiry>,
    ) -> Option<RejectReason> {
        let deadline = self.limits.deadline_ms.map(|after_ms| {
            unix_now_ms().saturating_add(after_ms.saturating_sub(self.elapsed_ms()))
        });
        let (grantor, bound) = outlives_grantor(lease, grantor, self.max_hops, deadline)?;
        Some(RejectReason::LeaseOutlivesGrantor {
            authority: Cow::Borrowed(authority),
            lease,
            grantor,
            bound: Cow::Borrowed(bound),
        })
    }
}

/// The lease never expires and its authority is not declared open-ended
/// (`by_agent`: an agent sent the transfer, [`Runtime::sent_by_agent`]).
pub(super) fn check_lease_bounded(
    contract: &ContractView<'_>,
    by_agent: bool,
) -> Option<RejectReason> {
    if contract.expires != Expiry::Never || contract.open_ended || !by_agent {
        return None;
    }
    Some(RejectReason::LeaseUnbounded {
        authority: Cow::Borrowed(contract.authority),
    })
}

impl<W: Workflow> Runtime<'_, W> {
    /// The lease the transfer carries, or one it derives from (the one its
    /// sender worked under, and so on back to the run's input), was
    /// revoked: by an operator (`Executor::revoke`) or by its grantor from
    /// a later turn (`cx.revoke`). The reason names the revoked lease's
    /// record and its authority.
    /// `authority`: the transfer's, from its contract view (given alone,
    /// as for [`lease_outlives_grantor`](Self::lease_outlives_grantor)).
    pub(super) fn check_lease_revoked(&self, authority: &'static str) -> Option<RejectReason> {
        let pending = u32::try_from(self.transcript.len().checked_sub(1)?).ok()?;
        let revoked = self.shared.void_lease(pending, pending, |seq| {
            self.transcript.transfers().lease_chain(seq)
        })?;
        // A lease's authority is what the transfers made under it record
        // as their sender's scope.
        let authority = if revoked == pending {
            authority
        } else {
            let transfers = self.transcript.transfers();
            let made_under =
                (revoked + 1..=pending).find(|s| transfers.granted_under(*s) == Some(revoked));
            made_under
                .and_then(|s| self.transcript.sender_scope(s as usize))
                .map_or(authority, |(authority, _)| authority)
        };
        Some(RejectReason::LeaseRevoked {
            authority: Cow::Borrowed(authority),
            seq: revoked,
        })
    }

    /// The current turn's lease acts, for its record; a renewal it was
    /// granted becomes its scope (what the leases it grants and the next
    /// receipt are checked against).
    pub(super) fn end_turn_leases(&mut self) -> Vec<LeaseAct> {
        if !self.shared.leases_used.load(Ordering::Acquire) {
            return Vec::new();
        }
        let (acts, renewed) = self.shared.leases().end_turn();
        if let (Some((seq, expires)), Some((authority, _))) = (renewed, self.turn.scope)
            && seq as usize == self.turn_input
        {
            self.turn.scope = Some((authority, expires));
        }
        acts
    }

    /// The revocations a grantor recorded with its turns, applied again to
    /// a run rebuilt from its records.
    pub(super) fn restore_revocations(&mut self) {
        let revoked: Vec<u32> = self
            .transcript
            .turns
            .iter()
            .flat_map(|(_, turn)| &turn.leases)
            .filter_map(|act| match act {
                LeaseAct::Revocation { lease } => Some(*lease),
                _ => None,
            })
            .collect();
        self.apply_revocations(revoked.into_iter().map(|seq| (seq, None)));
    }

    /// Applies revocations of this run's leases (by their record, each
    /// from the record after `after` on, or from the start): an operator's,
    /// read back from the ledger on resume and in a replay.
    pub(crate) fn apply_revocations(
        &mut self,
        revoked: impl IntoIterator<Item = (u32, Option<u32>)>,
    ) {
        let mut book = self.shared.leases();
        let mut any = false;
        for (seq, after) in revoked {
            book.revoke(seq, after);
            any = true;
        }
        drop(book);
        if any {
            self.shared.mark_leases();
        }
    }
}
