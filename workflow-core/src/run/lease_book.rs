//! What a run knows about its leases beyond the scope each turn works
//! under: the leases revoked in it (by their grantor from a later turn, or
//! by an operator, read back from the ledger), the renewal the current turn
//! was granted, and the turn's lease acts for its record. Shared between
//! the runtime and the turn's context (`RunShared::leases`).
//!
//! A lease is void when it, or any lease it derives from (the one its
//! grantor worked under, and so on back to the run's input), was revoked:
//! a lease never outlives its grantor's, and a revoked lease has ended.

use std::borrow::Cow;
use std::sync::atomic::Ordering;

use crate::run::{Context, RunShared};
use crate::spec::{Agent, Expiry, LeaseAct, LeaseId, Moment, Node, Workflow};
use crate::spec::{RenewalOutcome, RenewalRefused, RevokeRefused};

/// Slack allowed between a lease's wall-clock expiry and the run's
/// deadline as the runtime computes it: the sender computes its lease from
/// a clock read earlier (`cx.time_left()`), and the two readings round
/// differently.
pub(crate) const DEADLINE_SLACK_MS: u64 = 1_000;

/// The run's lease state (see the module's documentation).
#[derive(Debug, Default)]
pub(crate) struct LeaseBook {
    /// Leases revoked in this run, by their transfer record, each with the
    /// record after which it applies (`None`: from the start): revoked by
    /// their grantor (recorded with its turn) or by an operator (kept by
    /// the ledger).
    revoked: Vec<(u32, Option<u32>)>,
    /// The renewal granted to the current turn: its lease and new expiry.
    renewed: Option<(u32, Expiry)>,
    /// The current turn's lease acts, for its record.
    acts: Vec<LeaseAct>,
}

impl LeaseBook {
    /// Revokes lease `seq` for the checks made after record `after` (all,
    /// for `None`).
    pub(crate) fn revoke(&mut self, seq: u32, after: Option<u32>) {
        if !self.revoked.iter().any(|(s, a)| *s == seq && *a == after) {
            self.revoked.push((seq, after));
        }
    }

    /// Whether lease `seq` is revoked for a check made at `position` (the
    /// transfer waiting for its receipt, or the record a turn's outcome
    /// takes).
    fn is_revoked(&self, seq: u32, position: u32) -> bool {
        self.revoked
            .iter()
            .any(|(s, after)| *s == seq && after.is_none_or(|a| position > a))
    }

    /// The book a branch of a fan-out starts with: the leases revoked so
    /// far, no renewal, no acts.
    pub(crate) fn for_branch(&self) -> LeaseBook {
        LeaseBook {
            revoked: self.revoked.clone(),
            renewed: None,
            acts: Vec::new(),
        }
    }

    /// Takes in the revocations a branch's book holds that this one does
    /// not; whether there were any.
    pub(crate) fn absorb(&mut self, branch: &LeaseBook) -> bool {
        let before = self.revoked.len();
        for (seq, after) in &branch.revoked {
            self.revoke(*seq, *after);
        }
        self.revoked.len() > before
    }

    /// The current turn's lease acts and its renewal, taken for its record
    /// (the book is clean for the next turn).
    pub(crate) fn end_turn(&mut self) -> (Vec<LeaseAct>, Option<(u32, Expiry)>) {
        (std::mem::take(&mut self.acts), self.renewed.take())
    }
}

impl RunShared {
    /// The run's lease book.
    pub(crate) fn leases(&self) -> std::sync::MutexGuard<'_, LeaseBook> {
        // Every write is one push or one assignment: a panic elsewhere
        // leaves it consistent.
        self.leases.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Marks that the book holds something (a revocation, a renewal): until
    /// then, checks cost one atomic load.
    pub(crate) fn mark_leases(&self) {
        self.leases_used.store(true, Ordering::Release);
    }

    /// The expiry lease `seq` was renewed to in the current turn, if it was.
    pub(crate) fn renewed(&self, seq: u32) -> Option<Expiry> {
        if !self.leases_used.load(Ordering::Acquire) {
            return None;
        }
        self.leases()
            .renewed
            .filter(|(s, _)| *s == seq)
            .map(|(_, e)| e)
    }

    /// Whether a lease of this run can be void at all: an operator revoked
    /// something in the registry the run was given, or a turn used the
    /// lease book. When not, [`void_lease`](Self::void_lease) is `None` for
    /// every lease, and the receipt skips it without a call.
    #[inline(always)]
    pub(crate) fn may_void_leases(&self) -> bool {
        self.revocations.as_deref().is_some_and(|r| !r.is_empty())
            || self.leases_used.load(Ordering::Acquire)
    }

    /// The first lease found revoked among lease `seq` and those it derives
    /// from (`chain_of(seq)`, read from the run's transfers only when a
    /// lease can be void), for a check made at `position`: by the
    /// operator's registry (`Executor::revoke`, `with_revocations`) or in
    /// the run's book.
    pub(crate) fn void_lease(
        &self,
        seq: u32,
        position: u32,
        chain_of: impl FnOnce(u32) -> Vec<u32>,
    ) -> Option<u32> {
        let registry = self.revocations.as_deref().filter(|r| !r.is_empty());
        if registry.is_none() && !self.leases_used.load(Ordering::Acquire) {
            return None;
        }
        let chain = chain_of(seq);
        let book = self.leases();
        chain.into_iter().find(|s| {
            book.is_revoked(*s, position)
                || registry.is_some_and(|r| {
                    r.is_revoked(LeaseId {
                        run_id: self.run_id,
                        seq: *s,
                    })
                })
        })
    }
}

/// Whether a lease until `lease` would outlive what its grantor works
/// under: the grantor's own scope (`grantor`, `None` for none), the run's
/// hop cap, the run's deadline (as ms since the Unix epoch). The bound and
/// whose it is, or `None` when it is within all three. The one rule of the
/// receipt (`lease_outlives_grantor`) and of a renewal.
pub(crate) fn outlives_grantor(
    lease: Expiry,
    grantor: Option<Expiry>,
    max_hops: u32,
    deadline_unix_ms: Option<u64>,
) -> Option<(Expiry, &'static str)> {
    if let Some(grantor) = grantor
        && !lease.within(grantor)
    {
        return Some((grantor, "sender_scope"));
    }
    if let Expiry::AtHop(hop) = lease
        && hop > max_hops
    {
        return Some((Expiry::AtHop(max_hops), "hop_cap"));
    }
    if let (Expiry::AtUnixMs(ms), Some(deadline)) = (lease, deadline_unix_ms)
        && ms > deadline.saturating_add(DEADLINE_SLACK_MS)
    {
        return Some((Expiry::AtUnixMs(deadline), "deadline"));
    }
    None
}

/// When the lease of `turn` expires, a renewal recorded in `shared`
/// included (`None` for a turn under no scope).
#[inline]
pub(crate) fn expires_of(
    turn: &crate::run::TurnView<'_>,
    shared: &crate::run::RunShared,
) -> Option<Expiry> {
    let (_, expires) = turn.scope?;
    Some(shared.renewed(turn.lease_seq).unwrap_or(expires))
}

/// Wall-clock milliseconds since the Unix epoch.
pub(crate) fn unix_now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl<W: Workflow, A: Agent<W>> Context<'_, W, A> {
    /// The lease this turn works under: where it was granted, to name it
    /// (`None` for a turn under no scope).
    pub fn lease_id(&self) -> Option<LeaseId> {
        self.run.turn().scope.map(|_| LeaseId {
            run_id: self.run.shared().run_id,
            seq: self.run.turn().lease_seq,
        })
    }

    /// When this turn's lease expires, a renewal granted in this turn
    /// included (`None` for a turn under no scope).
    pub fn lease_expires(&self) -> Option<Expiry> {
        let (turn, shared) = self.run.turn_and_shared();
        expires_of(turn, shared)
    }

    /// Asks for this turn's own lease to be renewed until `until`: the
    /// runtime answers at once, from what the lease's grantor worked under
    /// when it granted it (its own scope's expiry, as recorded with the
    /// transfer), the run's hop cap and the run's deadline, by the same
    /// rule as the receipt (a renewal the grantor could not have granted
    /// is refused, never clamped). A granted renewal is what this turn's
    /// later tool calls, the leases it grants (`as_long_as_mine`) and the
    /// next receipt check. The request and its answer are recorded with the
    /// turn ([`LeaseAct::Renewal`]).
    pub fn request_renewal(&self, until: Expiry) -> Result<Expiry, RenewalRefused> {
        let Some((authority, expires)) = self.run.turn().scope else {
            return Err(RenewalRefused::NoLease);
        };
        let was = self.lease_expires().unwrap_or(expires);
        let answer = self.decide_renewal(was, until);
        let outcome = match &answer {
            Ok(_) => RenewalOutcome::Granted,
            Err(reason) => RenewalOutcome::Refused(reason.clone()),
        };
        let mut book = self.run.shared().leases();
        if answer.is_ok() {
            book.renewed = Some((self.run.turn().lease_seq, until));
        }
        book.acts.push(LeaseAct::Renewal {
            lease: self.run.turn().lease_seq,
            authority: Cow::Borrowed(authority),
            was,
            asked: until,
            outcome,
        });
        drop(book);
        self.run.shared().mark_leases();
        self.run.shared().mark();
        answer
    }

    /// The runtime's answer to a renewal of a lease now expiring at `was`
    /// until `until`.
    fn decide_renewal(&self, was: Expiry, until: Expiry) -> Result<Expiry, RenewalRefused> {
        if let Some(seq) = self.run.shared().void_lease(
            self.run.turn().lease_seq,
            self.run.turn().turn_seq,
            |seq| self.run.with_transfers(|t| t.lease_chain(seq)),
        ) {
            return Err(RenewalRefused::Revoked { seq });
        }
        if until == Expiry::Never {
            return Err(RenewalRefused::Unbounded);
        }
        let moment = Moment::at_hop(self.run.turn().hop);
        if was.expired_at(&moment) {
            return Err(RenewalRefused::Expired { expires: was });
        }
        let deadline = self.run.shared().deadline.map(|at| {
            let left = at.saturating_duration_since(std::time::Instant::now());
            unix_now_ms().saturating_add(left.as_millis() as u64)
        });
        // What the grantor worked under, as recorded with the transfer
        // that granted the lease.
        let lease_seq = self.run.turn().lease_seq;
        let grantor = self.run.with_transfers(|t| t.sender_expires(lease_seq));
        match outlives_grantor(until, grantor, self.run.shared().max_hops, deadline) {
            Some((grantor, bound)) => Err(RenewalRefused::OutlivesGrantor {
                asked: until,
                grantor,
                bound: Cow::Borrowed(bound),
            }),
            None => Ok(until),
        }
    }

    /// Revokes `lease`, which this agent granted in an earlier turn (the
    /// transfer record it made: [`EarlierTurn::output_seq`](crate::EarlierTurn::output_seq)).
    /// From now on the lease is void, and so is every lease granted under
    /// it: the next receipt of a handoff made under it is rejected
    /// (`lease_revoked`) and the next tool call under it refused. Only the
    /// grantor can (an operator uses `Executor::revoke`); the revocation is
    /// recorded with this turn ([`LeaseAct::Revocation`]) and applied again
    /// when the run is resumed.
    ///
    /// A lease this turn's own lease derives from is revoked too: the turn
    /// then works under a void lease, and what it hands on is rejected.
    pub fn revoke(&self, lease: LeaseId) -> Result<(), RevokeRefused> {
        if lease.run_id != self.run.shared().run_id {
            return Err(RevokeRefused::OtherRun {
                lease,
                run_id: self.run.shared().run_id,
            });
        }
        let seq = lease.seq;
        let ends = (seq < self.run.turn().turn_seq)
            .then(|| self.run.with_transfers(|t| t.ends(W::GRAPH, seq)))
            .flatten();
        let from = match ends {
            Some((from, Node::Agent(_))) => from,
            _ => return Err(RevokeRefused::NoSuchLease { seq }),
        };
        if from != Some(A::INDEX) {
            let granted_by = from.map_or("START", crate::spec::agent_name::<W>);
            return Err(RevokeRefused::NotGrantor {
                seq,
                granted_by: Cow::Borrowed(granted_by),
            });
        }
        let mut book = self.run.shared().leases();
        book.revoke(seq, None);
        book.acts.push(LeaseAct::Revocation { lease: seq });
        drop(book);
        self.run.shared().mark_leases();
        self.run.shared().mark();
        Ok(())
    }
}

/// The authority of workflow `W` named `name`, as the graph spells it
/// (`None`: no agent owns one of that name).
pub(crate) fn authority_named<W: Workflow>(name: &str) -> Option<&'static str> {
    W::GRAPH
        .agents
        .iter()
        .flat_map(|a| a.owns.iter().copied())
        .find(|a| *a == name)
}
