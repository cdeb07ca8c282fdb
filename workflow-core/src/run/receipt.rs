//! The receipt: the checks a transfer passes before its receiver works, one
//! function each, called in the order the book's enforcement chapter
//! documents from [`Runtime::check_receipt`] (the checks on the payload also
//! from `Runtime::end`, for the transfer to `END`, and the pre-conditions
//! from the first delivery, once the receiver's context exists). Each returns the reason
//! to reject, or `None`; the first reason found decides the receipt.
//!
//! The order: hop cap, run deadline, budgets, scope owned by the receiver,
//! scope not expired, the lease not revoked, bounded and not outliving its
//! sender's own scope nor the run (`run/lease_receipt.rs`), a stop part
//! with a machine-checkable condition, stop conditions, the evidence's
//! citations, a returned handoff sent again
//! unchanged, then the checks on the payload as JSON (size in bytes and in
//! tokens, forbidden fields, the invariants' predicates, the executor's
//! gate), then the receiver's pinned fields and `#[pre]` conditions
//! ([`check_pre`], once its context exists). A handoff that drops an open question its sender
//! received ([`Runtime::dropped_question`]) is rejected when it is recorded.

use std::borrow::Cow;

use crate::run::lease_receipt::check_lease_bounded;
use crate::run::{Context, Runtime};
use crate::spec::{Agent, ContractView, Invariants, Moment, RejectReason, TransferView};
use crate::spec::{Authority, UnknownAuthority, Workflow};

/// The contract's stop part has no machine-checkable condition and its
/// handoff type does not opt out (`#[handoff(unbounded_stop)]`).
fn check_stop_checkable(contract: &ContractView<'_>) -> Option<RejectReason> {
    if contract.unbounded_stop || contract.stop.checkable() {
        return None;
    }
    Some(RejectReason::StopUnchecked)
}

impl<'x, W: Workflow> Runtime<'x, W> {
    /// The receipt checks before the pre-conditions, in order; the first
    /// that fails. Inlined into the turn (measured: as a call of its own
    /// it cost ~40 instructions a transition). Written as early returns,
    /// not a chain of `Option::or_else`: the chain was left as a call of
    /// its own (~50 instructions a turn).
    /// `input` is the payload `contract` is the view of: the checks on
    /// the payload as JSON get the view built again from it, not this one
    /// (a view passed to a call is built in memory at every receipt;
    /// measured, about 20 instructions a transition).
    #[inline(always)]
    pub(super) fn check_receipt<A: Agent<W>>(
        &mut self,
        input: &A::Input,
        contract: Option<&ContractView<'_>>,
    ) -> Option<RejectReason> {
        if let Some(reason) = self.check_hop_cap() {
            return Some(reason);
        }
        if let Some(reason) = self.check_deadline() {
            return Some(reason);
        }
        // Each check below that has nothing to look at (no budget, no
        // returned handoff, no check on the payload as JSON) is skipped
        // here, in the turn, rather than called to find that out.
        if self.limits.budget.is_some()
            && let Some(reason) = self.check_budgets()
        {
            return Some(reason);
        }
        if let Some(c) = contract
            && let Some(reason) = self.check_contract::<A>(c)
        {
            return Some(reason);
        }
        if self.returned_payload.is_some()
            && let Some(reason) = self.check_resent_unchanged()
        {
            return Some(reason);
        }
        let limits = self.json_limits(contract)?;
        self.check_transfer_json(A::contract(input).as_ref(), limits, false)
            .into_iter()
            .next()
    }

    /// The receipt checks on the contract's parts, in order (scope owned,
    /// not expired, the lease not revoked, bounded, within its grantor's,
    /// a checkable stop part, stop conditions, evidence cited); the first
    /// that fails. The run's moment and whether an agent sent the transfer
    /// are looked up once for all of them.
    #[inline(always)]
    fn check_contract<A: Agent<W>>(&self, c: &ContractView<'_>) -> Option<RejectReason> {
        let moment = self.moment();
        if let Some(reason) = check_scope_owned::<W, A>(c) {
            return Some(reason);
        }
        if let Some(reason) = check_scope_expired(c, &moment) {
            return Some(reason);
        }
        if self.shared.may_void_leases()
            && let Some(reason) = self.check_lease_revoked(c.authority)
        {
            return Some(reason);
        }
        let by_agent = self.sent_by_agent();
        if let Some(reason) = check_lease_bounded(c, by_agent) {
            return Some(reason);
        }
        if let Some(reason) = self.check_lease_within_grantor(c, by_agent) {
            return Some(reason);
        }
        // The stop part's two checks (checkable, then no condition met)
        // in one call through the contract view.
        match c.stop.receipt_check(&moment, c.unbounded_stop) {
            Ok(()) => {}
            Err(None) => return Some(RejectReason::StopUnchecked),
            Err(Some(condition)) => return Some(RejectReason::StopConditionMet { condition }),
        }
        self.check_evidence_cited(c)
    }

    /// Audit mode: every receipt check before the pre-conditions, each
    /// failure found (the hop cap first: it cannot be audited, and a run
    /// past it stops there). The same checks as [`check_receipt`](Self::check_receipt),
    /// in the same order: one left out here is let through unrecorded.
    pub(super) fn audit_receipt<A: Agent<W>>(
        &mut self,
        contract: Option<&ContractView<'_>>,
    ) -> Vec<RejectReason> {
        if let Some(cap) = self.check_hop_cap() {
            return vec![cap];
        }
        let moment = self.moment();
        let by_agent = self.sent_by_agent();
        let mut found: Vec<RejectReason> = [
            self.check_deadline(),
            self.check_budgets(),
            contract.and_then(check_scope_owned::<W, A>),
            contract.and_then(|c| check_scope_expired(c, &moment)),
            contract.and_then(|c| self.check_lease_revoked(c.authority)),
            contract.and_then(|c| check_lease_bounded(c, by_agent)),
            contract.and_then(|c| self.check_lease_within_grantor(c, by_agent)),
            contract.and_then(check_stop_checkable),
            contract.and_then(|c| check_stop_conditions(c, &moment)),
            contract.and_then(|c| self.check_evidence_cited(c)),
            self.check_resent_unchanged(),
        ]
        .into_iter()
        .flatten()
        .collect();
        found.extend(self.transfer_verdicts(contract, true));
        found
    }

    /// The run has used up its hop cap.
    fn check_hop_cap(&self) -> Option<RejectReason> {
        if self.hops < self.max_hops {
            return None;
        }
        Some(RejectReason::HopCap {
            max_hops: self.max_hops,
        })
    }

    /// The run's deadline has passed.
    #[inline(always)]
    fn check_deadline(&self) -> Option<RejectReason> {
        let after_ms = self.limits.deadline_ms?;
        if self.elapsed_ms() < after_ms {
            return None;
        }
        Some(RejectReason::DeadlinePassed { after_ms })
    }

    /// One of the run's budgets is used up (tokens, cost, tool calls).
    fn check_budgets(&self) -> Option<RejectReason> {
        let (budget, limit, spent) = self.limits.budget?.over(&self.spent, true)?;
        Some(RejectReason::BudgetExhausted {
            budget,
            limit,
            spent,
        })
    }

    /// Where the run stands for the contract's expiries and stop conditions.
    fn moment(&self) -> Moment {
        Moment {
            hop: self.hops,
            tokens_spent: self.spent.total_tokens(),
        }
    }

    /// An evidence item is not backed by the run's record: it cites a tool
    /// call or a transfer that is not there, not the one cited, or did not
    /// succeed, or it is marked complete on a partial result; or it names
    /// a tool as its source and cites nothing, where its handoff does not
    /// accept uncited evidence (`#[handoff(uncited_evidence)]`).
    // Inlined: nearly always no evidence, found without a call of its own.
    #[inline(always)]
    fn check_evidence_cited(&self, contract: &ContractView<'_>) -> Option<RejectReason> {
        let items = contract.evidence.items();
        if items.is_empty() {
            return None;
        }
        self.check_citations(contract.uncited_evidence, items)
    }

    /// [`check_evidence_cited`](Self::check_evidence_cited) of a contract
    /// with evidence.
    #[inline(never)]
    fn check_citations(
        &self,
        uncited_evidence: bool,
        items: &[crate::spec::Evidence],
    ) -> Option<RejectReason> {
        let before = self.transcript.len().checked_sub(1)?;
        items.iter().find_map(|evidence| {
            if evidence.cites.is_empty() {
                let must_cite = !uncited_evidence && evidence.claims_tool(W::GRAPH.tools);
                return must_cite.then(|| RejectReason::UncitedEvidence {
                    source: evidence.source.to_string(),
                    claim: evidence.claim.to_string(),
                });
            }
            evidence.cites.iter().find_map(|citation| {
                crate::run::witness::check_citation(&self.transcript, evidence, citation, before)
            })
        })
    }

    /// A handoff returned to its sender comes back with the same bytes over
    /// the same edge. The returned payload is forgotten once its edge is
    /// used again, whatever the outcome.
    #[inline]
    fn check_resent_unchanged(&mut self) -> Option<RejectReason> {
        let (edge, bytes) = self.returned_payload.take()?;
        let i = self.transcript.len().checked_sub(1)?;
        let same_edge = self.transcript.entries.get(i).map(|e| e.edge) == Some(edge);
        if !same_edge {
            self.returned_payload = Some((edge, bytes));
            return None;
        }
        if self.transcript.payload_bytes(i) != Some(bytes.as_slice()) {
            return None;
        }
        Some(RejectReason::ResentUnchanged)
    }

    /// The checks every transfer gets, to an agent or to `END`, that need
    /// the payload as JSON: size limits, forbidden fields, the invariants'
    /// predicates, the gate. Skipped (nothing decoded) when none applies.
    #[inline]
    pub(super) fn check_transfer(
        &self,
        contract: Option<&ContractView<'_>>,
    ) -> Option<RejectReason> {
        let limits = self.json_limits(contract)?;
        self.check_transfer_json(contract, limits, false)
            .into_iter()
            .next()
    }

    /// The contract's size limits when a check on the transfer needs its
    /// payload as JSON (a size limit, forbidden fields, the invariants'
    /// predicates, a gate); `None` when none applies.
    #[inline(always)]
    fn json_limits(
        &self,
        contract: Option<&ContractView<'_>>,
    ) -> Option<(Option<u64>, Option<u64>)> {
        let limits = contract.map_or((None, None), |c| (c.max_bytes, c.max_tokens));
        let needs_json = limits != (None, None)
            || !W::Root::FORBIDDEN.is_empty()
            || W::Root::CHECKS
            || self.limits.gate.is_some();
        needs_json.then_some(limits)
    }

    /// The failures of the checks on the payload as JSON: the first only,
    /// or (`all`, audit mode) every one found.
    #[inline]
    pub(super) fn transfer_verdicts(
        &self,
        contract: Option<&ContractView<'_>>,
        all: bool,
    ) -> Vec<RejectReason> {
        match self.json_limits(contract) {
            Some(limits) => self.check_transfer_json(contract, limits, all),
            None => Vec::new(),
        }
    }

    /// [`check_transfer`](Self::check_transfer) once a check needs the
    /// payload as JSON (kept out of the common path).
    #[inline(never)]
    fn check_transfer_json(
        &self,
        contract: Option<&ContractView<'_>>,
        (max_bytes, max_tokens): (Option<u64>, Option<u64>),
        all: bool,
    ) -> Vec<RejectReason> {
        let mut found = Vec::new();
        let Some(i) = self.transcript.len().checked_sub(1) else {
            return found;
        };
        let text = match self.transcript.payload(i) {
            Ok(text) => text,
            Err(e) => return vec![unreadable(e)],
        };
        found.extend(check_size_in_bytes(&text, max_bytes));
        if !all && !found.is_empty() {
            return found;
        }
        found.extend(self.check_size_in_tokens(&text, max_tokens));
        if !all && !found.is_empty() {
            return found;
        }
        let payload: serde_json::Value = match serde_json::from_str(&text) {
            Ok(v) => v,
            Err(e) => return vec![unreadable(e)],
        };
        found.extend(check_forbidden_fields::<W>(&payload));
        if !all && !found.is_empty() {
            return found;
        }
        let Some(edge) = self
            .transcript
            .entries
            .get(i)
            .and_then(|entry| W::GRAPH.edges.get(entry.edge as usize))
        else {
            return found;
        };
        let view = TransferView {
            workflow: W::GRAPH.name,
            run_id: self.transcript.run_id,
            hop: self.hops,
            sender: W::GRAPH.node_name(edge.from),
            receiver: W::GRAPH.node_name(edge.to),
            payload_type: edge.payload,
            payload: &payload,
        };
        found.extend(check_invariants(self.root, &view));
        if !all && !found.is_empty() {
            return found;
        }
        found.extend(self.check_gate(contract, &view));
        found
    }

    /// The payload is larger in tokens (by the executor's counter) than its
    /// handoff allows.
    fn check_size_in_tokens(&self, text: &str, max: Option<u64>) -> Option<RejectReason> {
        let max = max?;
        let tokens = self.limits.tokens.count(text);
        if tokens <= max {
            return None;
        }
        Some(RejectReason::TooLarge {
            unit: Cow::Borrowed("tokens"),
            size: tokens,
            max,
        })
    }

    /// The executor's gate (a Rego policy, or any `Gate`) denies the
    /// transfer: it sees the transfer, its contract parts and the root.
    fn check_gate(
        &self,
        contract: Option<&ContractView<'_>>,
        view: &TransferView<'_>,
    ) -> Option<RejectReason> {
        let gate = self.limits.gate?;
        let root = match self.root.to_json() {
            Ok(root) => root,
            Err(e) => {
                return Some(RejectReason::Denied {
                    gate: gate.name(),
                    messages: vec![format!("the root invariants do not serialize: {e}")],
                });
            }
        };
        let payload = view.payload;
        let contract_json = contract.map_or(serde_json::Value::Null, |c| {
            serde_json::Value::Object(
                c.parts
                    .iter()
                    .filter_map(|(part, path)| {
                        // A part of the short form is named by its path
                        // (`contract.op`).
                        let value = path
                            .split('.')
                            .try_fold(payload, |value, field| value.get(field))?;
                        Some(((*part).to_owned(), value.clone()))
                    })
                    .collect(),
            )
        });
        let input = serde_json::json!({
            "workflow": view.workflow,
            "run_id": view.run_id,
            "hop": view.hop,
            "sender": view.sender,
            "receiver": view.receiver,
            "payload_type": view.payload_type,
            "contract": contract_json,
            "payload": payload,
            "root": root,
        });
        let messages = gate.check(&input).err()?;
        Some(RejectReason::Denied {
            gate: gate.name(),
            messages,
        })
    }

    /// The first question the current turn received that `contract` neither
    /// carries forward nor resolves with evidence (checked when the turn's
    /// handoff is recorded: an open question is never dropped silently).
    #[inline]
    pub(super) fn dropped_question(
        &mut self,
        contract: Option<&ContractView<'_>>,
    ) -> Option<String> {
        if self.open.is_empty() {
            return None;
        }
        let open = std::mem::take(&mut self.open);
        open.into_iter().find(|q| match &contract {
            None => true,
            Some(c) => !c.open.questions().contains(&q.as_str()) && !c.evidence.resolves(q),
        })
    }
}

/// The delegated scope has expired (by hop or wall clock) at `moment`.
#[inline(always)]
fn check_scope_expired(contract: &ContractView<'_>, moment: &Moment) -> Option<RejectReason> {
    if !contract.expires.expired_at(moment) {
        return None;
    }
    Some(RejectReason::ScopeExpired {
        authority: Cow::Borrowed(contract.authority),
    })
}

/// One of the contract's stop conditions is already met at `moment`.
///
/// (Runs after [`check_stop_checkable`].)
fn check_stop_conditions(contract: &ContractView<'_>, moment: &Moment) -> Option<RejectReason> {
    let condition = contract.stop.met_at(moment)?;
    Some(RejectReason::StopConditionMet { condition })
}

/// The contract delegates an authority the receiver `A` does not own (only
/// a hand-written workflow, or a workflow input, can get here).
fn check_scope_owned<W: Workflow, A: Agent<W>>(
    contract: &ContractView<'_>,
) -> Option<RejectReason> {
    let owns = W::GRAPH
        .agents
        .get(A::INDEX as usize)
        .is_some_and(|a| a.owns.contains(&contract.authority));
    // A missing `#[authority]` part is a compile error already.
    let unknown = contract.authority == <UnknownAuthority as Authority>::NAME;
    if owns || unknown {
        return None;
    }
    Some(RejectReason::ScopeNotOwned {
        authority: Cow::Borrowed(contract.authority),
    })
}

/// The payload is larger in bytes (as JSON) than its handoff allows.
fn check_size_in_bytes(text: &str, max: Option<u64>) -> Option<RejectReason> {
    let max = max?;
    if text.len() as u64 <= max {
        return None;
    }
    Some(RejectReason::TooLarge {
        unit: Cow::Borrowed("bytes"),
        size: text.len() as u64,
        max,
    })
}

/// The payload holds a field the root invariants forbid.
fn check_forbidden_fields<W: Workflow>(payload: &serde_json::Value) -> Option<RejectReason> {
    let path = crate::spec::find_forbidden(payload, W::Root::FORBIDDEN)?;
    Some(RejectReason::ForbiddenField {
        path: path.to_owned(),
    })
}

/// One of the root invariants' predicates rejects the transfer.
fn check_invariants<R: Invariants>(root: &R, view: &TransferView<'_>) -> Option<RejectReason> {
    let (invariant, message) = root.check(view).err()?;
    Some(RejectReason::InvariantBroken {
        invariant: Cow::Borrowed(invariant),
        message,
    })
}

/// The receiver's first pinned field (`#[pin(..)]`) that differs from its
/// root invariant, then its first `#[pre]` condition that does not hold.
/// Agent `A`'s post-conditions on `out`, the first that fails: none for an
/// agent without any, those that need no context without one, the others
/// on the context `cx` makes (built only then).
pub(super) fn check_post<'c, W: Workflow, A: Agent<W>>(
    out: &A::Next,
    cx: impl FnOnce() -> Context<'c, W, A>,
) -> Result<(), &'static crate::spec::Condition> {
    match (A::HAS_POST, A::POST_READS_CONTEXT) {
        (false, _) => Ok(()),
        (true, false) => A::post_without_context(out),
        (true, true) => A::post(out, &cx()),
    }
}

pub(super) fn check_pre<W: Workflow, A: Agent<W>>(
    input: &A::Input,
    cx: &Context<'_, W, A>,
) -> Option<RejectReason> {
    if let Err((invariant, message)) = A::pinned(input, cx.root()) {
        return Some(RejectReason::InvariantBroken {
            invariant: Cow::Borrowed(invariant),
            message,
        });
    }
    let condition = A::pre(input, cx).err()?;
    Some(RejectReason::PreCondition {
        condition: Cow::Borrowed(condition.expr),
        message: Cow::Borrowed(condition.message),
    })
}

/// A recorded payload that does not read back as JSON (a bug: the record's
/// encoder guarantees it).
fn unreadable(error: impl std::fmt::Display) -> RejectReason {
    RejectReason::SchemaMismatch {
        errors: vec![error.to_string()],
    }
}
