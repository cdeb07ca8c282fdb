//! What the runtime tells the metrics, one call per place it happens: each
//! function here is a no-op without the `metrics` feature, so that the call
//! sites in the runtime stay one line and the hot path stays bare.

use std::future::Future;

use crate::spec::Condition;
use crate::spec::{Agent, Tool, Workflow};
use crate::spec::{Reject, RunError, ToolError};

#[cfg(feature = "metrics")]
pub(crate) use recording::*;

/// Without the `metrics` feature: nothing is measured.
#[cfg(not(feature = "metrics"))]
mod bare {
    use super::*;

    /// Agent `A`'s body, timed as an `invoke_agent` operation.
    #[inline(always)]
    pub(crate) fn timed_turn<W: Workflow, A: Agent<W>, F>(body: F) -> F
    where
        F: Future<Output = Result<A::Next, Reject>>,
    {
        body
    }

    /// Tool `T`'s call, timed as an `execute_tool` operation.
    #[inline(always)]
    pub(crate) fn timed_tool<W: Workflow, T: Tool<W>, F>(call: F) -> F
    where
        F: Future<Output = Result<T::Output, ToolError>>,
    {
        call
    }

    /// When a run started: nothing to keep.
    pub(crate) struct Started;

    /// When a run starts, for [`run_ended`].
    #[inline(always)]
    pub(crate) fn now() -> Started {
        Started
    }

    /// A run of `W` ended with `ended`.
    #[inline(always)]
    pub(crate) fn run_ended<W: Workflow, O>(_started: Started, _ended: &Result<O, RunError>) {}

    /// The receipt of the transcript's last transfer was decided.
    #[inline(always)]
    pub(crate) fn receipt_decided<W: Workflow>(
        _edge: Option<u16>,
        _receipt: impl FnOnce() -> Option<crate::spec::Receipt>,
    ) {
    }

    /// A post-condition of agent `A` failed.
    #[inline(always)]
    pub(crate) fn post_condition_failed<W: Workflow, A: Agent<W>>(_condition: &Condition) {}

    /// Audit mode let tool `T` be called outside the turn's scope.
    #[inline(always)]
    pub(crate) fn audit_tool_call<W: Workflow, T: Tool<W>>() {}

    /// Audit mode let a failed check through on the last transfer.
    #[inline(always)]
    pub(crate) fn audit_verdict<W: Workflow>(
        _edge: Option<u16>,
        _reason: &crate::spec::RejectReason,
    ) {
    }
}

#[cfg(not(feature = "metrics"))]
pub(crate) use bare::*;

/// The trace and span ids (hex) of the current span, for a ledger record:
/// empty unless the span is traced with OpenTelemetry and the layer's crate
/// gave the reader ([`crate::metrics::link_trace_ids`]).
#[cfg(all(feature = "tracing", feature = "metrics"))]
pub(crate) fn trace_ids() -> (String, String) {
    crate::observe::metrics::trace_ids()
}

/// The trace and span ids of the current span: without the `tracing` and
/// `metrics` features, none.
#[cfg(not(all(feature = "tracing", feature = "metrics")))]
#[inline(always)]
pub(crate) fn trace_ids() -> (String, String) {
    (String::new(), String::new())
}

/// With the `metrics` feature: each hook records into the instruments of
/// [`crate::metrics`].
#[cfg(feature = "metrics")]
mod recording {
    use std::pin::Pin;
    use std::task::{Context, Poll};
    // The calibrated CPU counter the records are timed with: a few ns a read.
    use quanta::Instant;

    use opentelemetry::KeyValue;

    use super::*;
    use crate::observe::metrics::with_instruments;
    use crate::spec::Node;
    use crate::spec::{Escalation, Receipt, RejectReason};
    use crate::spec::{agent_name, error_type};

    pin_project_lite::pin_project! {
        /// A future whose duration is recorded as a GenAI operation when it
        /// ends: completed (`error.type` from its output), or dropped
        /// before it completed.
        pub(crate) struct Timed<F, K: Operation> {
            #[pin]
            inner: F,
            started: Instant,
            kind: Option<K>,
        }
        impl<F, K: Operation> PinnedDrop for Timed<F, K> {
            fn drop(this: Pin<&mut Self>) {
                let this = this.project();
                if let Some(kind) = this.kind.take() {
                    let elapsed = this.started.elapsed();
                    let error = kind.dropped(elapsed);
                    record_duration(elapsed.as_secs_f64(), kind.attributes(), Some(error));
                }
            }
        }
    }

    /// What a [`Timed`] future is: its attributes and how its output and
    /// an early drop read as `error.type`.
    pub(crate) trait Operation {
        /// The output of the timed future.
        type Output;
        /// `gen_ai.operation.name` and the operation's subject.
        fn attributes(&self) -> [KeyValue; 2];
        /// The `error.type` of an output, `None` for a success.
        fn error(output: &Self::Output) -> Option<&'static str>;
        /// The `error.type` of a drop before completion after `elapsed`.
        fn dropped(&self, elapsed: std::time::Duration) -> &'static str;
    }

    impl<F: Future, K: Operation<Output = F::Output>> Future for Timed<F, K> {
        type Output = F::Output;
        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
            let this = self.project();
            let poll = this.inner.poll(cx);
            if let Poll::Ready(output) = &poll
                && let Some(kind) = this.kind.take()
            {
                let elapsed = this.started.elapsed().as_secs_f64();
                record_duration(elapsed, kind.attributes(), K::error(output));
            }
            poll
        }
    }

    fn record_duration(seconds: f64, attributes: [KeyValue; 2], error: Option<&'static str>) {
        let [operation, subject] = attributes;
        with_instruments(|i| match error {
            None => i.duration.record(seconds, &[operation, subject]),
            Some(e) => i.duration.record(
                seconds,
                &[operation, subject, KeyValue::new("error.type", e)],
            ),
        });
    }

    /// An agent turn (`invoke_agent`).
    pub(crate) struct Turn<W, A> {
        agent: std::marker::PhantomData<fn() -> (W, A)>,
    }

    impl<W: Workflow, A: Agent<W>> Operation for Turn<W, A> {
        type Output = Result<A::Next, Reject>;
        fn attributes(&self) -> [KeyValue; 2] {
            [
                KeyValue::new("gen_ai.operation.name", "invoke_agent"),
                KeyValue::new("gen_ai.agent.name", agent_name::<W>(A::INDEX)),
            ]
        }
        fn error(output: &Self::Output) -> Option<&'static str> {
            output.as_ref().err().map(|_| "agent_failed")
        }
        fn dropped(&self, elapsed: std::time::Duration) -> &'static str {
            // The generated code drops the body when its timeout fires.
            match A::TIMEOUT {
                Some(limit) if elapsed >= limit => "timeout",
                _ => "cancelled",
            }
        }
    }

    /// A tool call (`execute_tool`).
    pub(crate) struct Call<W, T> {
        tool: std::marker::PhantomData<fn() -> (W, T)>,
    }

    impl<W: Workflow, T: Tool<W>> Operation for Call<W, T> {
        type Output = Result<T::Output, ToolError>;
        fn attributes(&self) -> [KeyValue; 2] {
            [
                KeyValue::new("gen_ai.operation.name", "execute_tool"),
                KeyValue::new("gen_ai.tool.name", T::NAME),
            ]
        }
        fn error(output: &Self::Output) -> Option<&'static str> {
            output.as_ref().err().map(|_| "tool_error")
        }
        fn dropped(&self, _elapsed: std::time::Duration) -> &'static str {
            "cancelled"
        }
    }

    /// Agent `A`'s body, timed as an `invoke_agent` operation.
    pub(crate) fn timed_turn<W: Workflow, A: Agent<W>, F>(body: F) -> Timed<F, Turn<W, A>>
    where
        F: Future<Output = Result<A::Next, Reject>>,
    {
        Timed {
            inner: body,
            started: Instant::now(),
            kind: Some(Turn {
                agent: std::marker::PhantomData,
            }),
        }
    }

    /// Tool `T`'s call, timed as an `execute_tool` operation.
    pub(crate) fn timed_tool<W: Workflow, T: Tool<W>, F>(call: F) -> Timed<F, Call<W, T>>
    where
        F: Future<Output = Result<T::Output, ToolError>>,
    {
        Timed {
            inner: call,
            started: Instant::now(),
            kind: Some(Call {
                tool: std::marker::PhantomData,
            }),
        }
    }

    /// When a run starts, for [`run_ended`].
    pub(crate) fn now() -> Instant {
        Instant::now()
    }

    /// A run of `W` ended with `ended`: its duration as an
    /// `invoke_workflow` operation.
    pub(crate) fn run_ended<W: Workflow, O>(started: Instant, ended: &Result<O, RunError>) {
        let seconds = started.elapsed().as_secs_f64();
        let attributes = [
            KeyValue::new("gen_ai.operation.name", "invoke_workflow"),
            KeyValue::new("workflow.name", W::GRAPH.name),
        ];
        record_duration(seconds, attributes, ended.as_ref().err().map(error_type));
    }

    /// The receipt of the transcript's last transfer was decided: counts
    /// the handoff, and the condition that rejected it if one did.
    pub(crate) fn receipt_decided<W: Workflow>(
        edge: Option<u16>,
        receipt: impl FnOnce() -> Option<Receipt>,
    ) {
        let Some(edge) = edge.and_then(|e| W::GRAPH.edges.get(e as usize)) else {
            return;
        };
        let workflow = KeyValue::new("workflow.name", W::GRAPH.name);
        let sender = KeyValue::new("workflow.sender", W::GRAPH.node_name(edge.from));
        let receiver = KeyValue::new("workflow.receiver", W::GRAPH.node_name(edge.to));
        let receipt = receipt();
        let (outcome, rejection) = match &receipt {
            Some(Receipt::Rejected { reason }) => ("rejected", Some(reason)),
            Some(Receipt::Escalated {
                reason: Escalation::Rejected { reason },
            }) => ("escalated", Some(reason)),
            Some(Receipt::Escalated { .. }) => ("escalated", None),
            Some(Receipt::Approved { .. }) => ("approved", None),
            Some(Receipt::Audited { .. }) => ("audited", None),
            Some(Receipt::TurnFailed { .. }) => ("turn_failed", None),
            _ => ("accepted", None),
        };
        let Some(reason) = rejection else {
            let receipt = KeyValue::new("workflow.receipt", outcome);
            with_instruments(|i| i.handoffs.add(1, &[workflow, sender, receiver, receipt]));
            return;
        };
        let condition = match reason {
            RejectReason::PreCondition { condition, .. } => Some(("pre", condition.to_string())),
            RejectReason::StopConditionMet { condition } => Some(("stop", condition.clone())),
            RejectReason::InvariantBroken { invariant, .. } => {
                Some(("invariant", invariant.to_string()))
            }
            _ => None,
        };
        let handoff = [
            workflow.clone(),
            sender.clone(),
            receiver.clone(),
            KeyValue::new("workflow.receipt", outcome),
            KeyValue::new("workflow.reject_reason", reject_code(reason)),
        ];
        with_instruments(|i| {
            i.handoffs.add(1, &handoff);
            if let Some((kind, text)) = condition {
                let agent = match edge.to {
                    Node::Agent(a) => agent_name::<W>(a),
                    _ => W::GRAPH.node_name(edge.to),
                };
                i.condition_failures.add(
                    1,
                    &[
                        workflow,
                        KeyValue::new("workflow.agent", agent),
                        sender,
                        receiver,
                        KeyValue::new("workflow.condition.kind", kind),
                        KeyValue::new("workflow.condition", text),
                    ],
                );
            }
        });
    }

    /// A post-condition of agent `A` failed.
    pub(crate) fn post_condition_failed<W: Workflow, A: Agent<W>>(condition: &Condition) {
        with_instruments(|i| {
            i.condition_failures.add(
                1,
                &[
                    KeyValue::new("workflow.name", W::GRAPH.name),
                    KeyValue::new("workflow.agent", agent_name::<W>(A::INDEX)),
                    KeyValue::new("workflow.condition.kind", "post"),
                    KeyValue::new("workflow.condition", condition.expr),
                ],
            )
        });
    }

    /// Audit mode let a failed check through on the transfer over `edge`:
    /// counted by sender, receiver and reason.
    pub(crate) fn audit_verdict<W: Workflow>(edge: Option<u16>, reason: &RejectReason) {
        let Some(edge) = edge.and_then(|e| W::GRAPH.edges.get(e as usize)) else {
            return;
        };
        let attributes = [
            KeyValue::new("workflow.name", W::GRAPH.name),
            KeyValue::new("workflow.sender", W::GRAPH.node_name(edge.from)),
            KeyValue::new("workflow.receiver", W::GRAPH.node_name(edge.to)),
            KeyValue::new("workflow.reject_reason", reject_code(reason)),
        ];
        with_instruments(|i| i.audit_verdicts.add(1, &attributes));
    }

    /// Audit mode let tool `T` be called outside the turn's scope: counted
    /// with the reason `out_of_scope` and the tool's name.
    pub(crate) fn audit_tool_call<W: Workflow, T: Tool<W>>() {
        let attributes = [
            KeyValue::new("workflow.name", W::GRAPH.name),
            KeyValue::new("gen_ai.tool.name", T::NAME),
            KeyValue::new("workflow.reject_reason", "out_of_scope"),
        ];
        with_instruments(|i| i.audit_verdicts.add(1, &attributes));
    }

    /// The stable code of a reject reason (its `code` in the records).
    fn reject_code(reason: &RejectReason) -> &'static str {
        match reason {
            RejectReason::PreCondition { .. } => "pre_condition",
            RejectReason::LoopBound { .. } => "loop_bound",
            RejectReason::HopCap { .. } => "hop_cap",
            RejectReason::ScopeExpired { .. } => "scope_expired",
            RejectReason::StopConditionMet { .. } => "stop_condition_met",
            RejectReason::StopUnchecked => "stop_unchecked",
            RejectReason::UncitedEvidence { .. } => "uncited_evidence",
            RejectReason::CitationNotFound { .. } => "citation_not_found",
            RejectReason::CitationMismatch { .. } => "citation_mismatch",
            RejectReason::CitationFailed { .. } => "citation_failed",
            RejectReason::CompleteOnPartial { .. } => "complete_on_partial",
            RejectReason::LeaseUnbounded { .. } => "lease_unbounded",
            RejectReason::LeaseOutlivesGrantor { .. } => "lease_outlives_grantor",
            RejectReason::LeaseRevoked { .. } => "lease_revoked",
            RejectReason::ScopeNotOwned { .. } => "scope_not_owned",
            RejectReason::DeadlinePassed { .. } => "deadline_passed",
            RejectReason::BudgetExhausted { .. } => "budget_exhausted",
            RejectReason::TooLarge { .. } => "too_large",
            RejectReason::ForbiddenField { .. } => "forbidden_field",
            RejectReason::InvariantBroken { .. } => "invariant_broken",
            RejectReason::Denied { .. } => "denied",
            RejectReason::TooDeep { .. } => "too_deep",
            RejectReason::NonFinite { .. } => "non_finite",
            RejectReason::SchemaMismatch { .. } => "schema_mismatch",
            RejectReason::UncertaintyDropped { .. } => "uncertainty_dropped",
            RejectReason::VerdictDropped { .. } => "verdict_dropped",
            RejectReason::ResentUnchanged => "resent_unchanged",
            RejectReason::HumanRejected { .. } => "human_rejected",
        }
    }
}
