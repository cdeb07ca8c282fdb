//! What the executor witnesses at a seam: receipts and reject reasons,
//! transfer and turn records, a person's decision, and how payload bytes are
//! encoded.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::fmt;

/// Why a receiver did not accept a transfer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "code", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum RejectReason {
    /// A `#[pre(..)]` condition of the receiver did not hold.
    PreCondition {
        /// The condition's source text.
        condition: Cow<'static, str>,
        /// The condition's message.
        message: Cow<'static, str>,
    },
    /// The edge's declared loop bound is used up.
    LoopBound {
        /// The bound declared on the edge (`to = [agent(max = N)]`).
        bound: u32,
    },
    /// The run reached its hop cap.
    HopCap {
        /// The cap in force.
        max_hops: u32,
    },
    /// The delegated authority expired before the receiver started.
    ScopeExpired {
        /// The authority.
        authority: Cow<'static, str>,
    },
    /// One of the contract's stop conditions was already met.
    StopConditionMet {
        /// Which condition.
        condition: String,
    },
    /// The stop part holds no machine-checkable condition (no hop, deadline
    /// or token budget: empty, or only conditions stated in words), and the
    /// handoff type does not opt out with `#[handoff(unbounded_stop)]`.
    StopUnchecked,
    /// An evidence item whose source names one of the workflow's tools
    /// cites no call of the run, and the handoff type does not accept
    /// uncited evidence (`#[handoff(uncited_evidence)]`).
    UncitedEvidence {
        /// The evidence's source (the tool it names).
        source: String,
        /// Its claim.
        claim: String,
    },
    /// An evidence item cites a tool call or a transfer record that is not
    /// in this run's record (a call that never happened, a record not yet
    /// made).
    CitationNotFound {
        /// The citation, as displayed (`tool call `lookup` (turn #3, call 0)`).
        citation: String,
    },
    /// An evidence item cites a call or a record that exists, but not the
    /// one cited: another tool, or another result than the digest says.
    CitationMismatch {
        /// The citation, as displayed.
        citation: String,
        /// What differs: `tool` or `digest` (what the citation says is in
        /// the payload, in the citation itself).
        field: Cow<'static, str>,
        /// What the run's record holds.
        recorded: String,
    },
    /// An evidence item cites a tool call that failed, or a transfer that
    /// was not accepted: nothing backs its claim.
    CitationFailed {
        /// The citation, as displayed.
        citation: String,
        /// What the record says went wrong.
        error: String,
    },
    /// An evidence item marked `complete` cites a tool call whose result
    /// was partial or empty (refused by the tool's fail-fast rule).
    CompleteOnPartial {
        /// The citation, as displayed.
        citation: String,
        /// The tool's error.
        error: String,
    },
    /// The lease in the handoff never expires (`"expires": "never"`), and
    /// its authority is not declared open-ended
    /// (`#[workflow(open_ended = [..])]`).
    LeaseUnbounded {
        /// The authority.
        authority: Cow<'static, str>,
    },
    /// The lease in the handoff would outlive what its sender works under:
    /// the sender's own scope (`bound: "sender_scope"`), the run's hop cap
    /// (`"hop_cap"`, as a hop) or the run's deadline (`"deadline"`, in ms
    /// since the Unix epoch). A lease counted in hops cannot be compared
    /// with a bound in wall-clock time, nor the other way round: it is
    /// rejected too.
    LeaseOutlivesGrantor {
        /// The authority leased.
        authority: Cow<'static, str>,
        /// The lease's expiry.
        lease: crate::spec::Expiry,
        /// The bound it would outlive.
        grantor: crate::spec::Expiry,
        /// Whose bound: `sender_scope`, `hop_cap` or `deadline`.
        bound: Cow<'static, str>,
    },
    /// The lease was revoked (`Executor::revoke`): the lease the handoff
    /// carries, or the one its sender worked under.
    LeaseRevoked {
        /// The authority leased.
        authority: Cow<'static, str>,
        /// The transfer record that granted the lease.
        seq: u32,
    },
    /// The contract delegates an authority the receiver does not own (only a
    /// hand-written workflow can get here: generated ones do not compile).
    // True of every edge of a generated workflow, the caller's into the
    // entry included (`entry_owns` in the macro's codegen). Not in the doc
    // comment above: it is the published schema's description.
    ScopeNotOwned {
        /// The authority.
        authority: Cow<'static, str>,
    },
    /// The run's deadline passed.
    DeadlinePassed {
        /// The deadline, in ms after the run started.
        after_ms: u64,
    },
    /// One of the run's budgets is used up.
    BudgetExhausted {
        /// Which budget: `tokens`, `cost_micros` or `tool_calls`.
        budget: Cow<'static, str>,
        /// Its limit.
        limit: u64,
        /// What was spent.
        spent: u64,
    },
    /// The payload is larger than its handoff allows (never truncated).
    TooLarge {
        /// `bytes` or `tokens`.
        unit: Cow<'static, str>,
        /// The payload's size.
        size: u64,
        /// The declared maximum.
        max: u64,
    },
    /// The payload carries a field the root invariants forbid.
    ForbiddenField {
        /// The forbidden path as declared (`customer.ssn`).
        path: String,
    },
    /// A declared invariant does not hold for this transfer.
    InvariantBroken {
        /// The invariant's name.
        invariant: Cow<'static, str>,
        /// What its check said.
        message: String,
    },
    /// The executor's gate (a policy, an acceptance hook) denied the transfer.
    Denied {
        /// The gate's name.
        gate: Cow<'static, str>,
        /// Its messages.
        messages: Vec<String>,
    },
    /// The payload nests arrays and objects deeper than
    /// [`MAX_PAYLOAD_DEPTH`](crate::MAX_PAYLOAD_DEPTH): refused by the
    /// encoder before it went further, so the record holds `null` instead.
    TooDeep {
        /// The limit in force.
        limit: u32,
    },
    /// The payload holds a non-finite number (NaN or an infinity), which
    /// JSON cannot hold: the record holds `null` instead.
    NonFinite {
        /// Where, as a path (`prices[2]`; empty for the payload itself).
        path: String,
        /// The number: `NaN`, `inf` or `-inf`.
        value: String,
    },
    /// A payload that crossed a serialization boundary (from a person, a
    /// model, storage) does not match the receiver's input schema.
    SchemaMismatch {
        /// The validator's messages.
        errors: Vec<String>,
    },
    /// The sender dropped an uncertainty item it received: neither carried
    /// forward, nor resolved with evidence, nor escalated.
    UncertaintyDropped {
        /// The item's question.
        question: String,
    },
    /// The branches of a fan-out gave different verdicts (`#[verdict]`), and
    /// the join agent's handoff dropped the disagreement: it neither carries
    /// an open question naming every branch and its verdict, nor evidence
    /// citing every branch's outcome record.
    VerdictDropped {
        /// The fan-out: the record its agent's turn worked on.
        fork: u32,
        /// Every branch's verdict, in branch order.
        verdicts: Vec<crate::spec::BranchVerdict>,
    },
    /// A sender whose handoff was returned to it sent the same payload again.
    ResentUnchanged,
    /// A person rejected the transfer at an escalation.
    HumanRejected {
        /// Who decided.
        by: String,
        /// Why.
        note: String,
    },
}

impl fmt::Display for RejectReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RejectReason::PreCondition { condition, message } => {
                write!(f, "pre-condition `{condition}` failed: {message}")
            }
            RejectReason::LoopBound { bound } => write!(f, "loop bound of {bound} used up"),
            RejectReason::HopCap { max_hops } => write!(f, "hop cap of {max_hops} reached"),
            RejectReason::ScopeExpired { authority } => {
                write!(f, "scope over authority `{authority}` expired")
            }
            RejectReason::StopConditionMet { condition } => {
                write!(f, "stop condition met: {condition}")
            }
            RejectReason::StopUnchecked => f.write_str(
                "the stop part has no machine-checkable condition (a hop, a deadline or a token budget); conditions in words alone do not stop anything",
            ),
            RejectReason::UncitedEvidence { source, claim } => write!(
                f,
                "evidence `{claim}` names tool `{source}` as its source but cites no call of it (cite the call, or mark the handoff `#[handoff(uncited_evidence)]`)"
            ),
            RejectReason::CitationNotFound { citation } => {
                write!(f, "evidence cites {citation}, which is not in this run's record")
            }
            RejectReason::CitationMismatch {
                citation,
                field,
                recorded,
            } => write!(
                f,
                "evidence cites {citation} with another {field} than the run's record holds (`{recorded}`)"
            ),
            RejectReason::CitationFailed { citation, error } => {
                write!(f, "evidence cites {citation}, which did not succeed: {error}")
            }
            RejectReason::CompleteOnPartial { citation, error } => write!(
                f,
                "evidence marked complete cites {citation}, whose result was partial: {error} (mark it partial, or cite a complete result)"
            ),
            RejectReason::LeaseUnbounded { authority } => write!(
                f,
                "the lease on authority `{authority}` never expires; bound it (`.until_hop(n)`, `.until_unix_ms(ms)`) or declare the authority open-ended"
            ),
            RejectReason::LeaseOutlivesGrantor {
                authority,
                lease,
                grantor,
                bound,
            } => write!(
                f,
                "the lease on authority `{authority}` ({lease:?}) outlives the sender's bound ({bound}: {grantor:?})"
            ),
            RejectReason::LeaseRevoked { authority, seq } => write!(
                f,
                "the lease on authority `{authority}` granted at record {seq} was revoked"
            ),
            RejectReason::ScopeNotOwned { authority } => {
                write!(f, "the receiver does not own authority `{authority}`")
            }
            RejectReason::DeadlinePassed { after_ms } => {
                write!(f, "the run's deadline of {after_ms} ms passed")
            }
            RejectReason::BudgetExhausted {
                budget,
                limit,
                spent,
            } => write!(f, "{budget} budget of {limit} used up ({spent} spent)"),
            RejectReason::TooLarge { unit, size, max } => {
                write!(
                    f,
                    "payload of {size} {unit} exceeds the handoff's maximum of {max}"
                )
            }
            RejectReason::ForbiddenField { path } => {
                write!(f, "payload carries forbidden field `{path}`")
            }
            RejectReason::InvariantBroken { invariant, message } => {
                write!(f, "invariant `{invariant}` broken: {message}")
            }
            RejectReason::Denied { gate, messages } => {
                write!(f, "denied by {gate}: {}", messages.join("; "))
            }
            RejectReason::TooDeep { limit } => write!(
                f,
                "payload nests arrays and objects deeper than the limit of {limit} levels (not recorded)"
            ),
            RejectReason::NonFinite { path, value } => write!(
                f,
                "payload holds the non-finite number {value} at `{path}`, which JSON cannot hold (not recorded)"
            ),
            RejectReason::SchemaMismatch { errors } => {
                write!(
                    f,
                    "payload does not match its schema: {}",
                    errors.join("; ")
                )
            }
            RejectReason::UncertaintyDropped { question } => write!(
                f,
                "uncertainty `{question}` was dropped (carry it forward, resolve it with evidence, or escalate)"
            ),
            RejectReason::VerdictDropped { fork, verdicts } => {
                let said: Vec<String> = verdicts.iter().map(ToString::to_string).collect();
                write!(
                    f,
                    "the branches of fan-out #{fork} disagree ({}) and the join dropped it (carry it forward as an open question naming every branch and its verdict, or resolve it with evidence citing every branch's outcome record)",
                    said.join(", ")
                )
            }
            RejectReason::ResentUnchanged => {
                f.write_str("the returned handoff was sent again unchanged")
            }
            RejectReason::HumanRejected { by, note } => write!(f, "rejected by {by}: {note}"),
        }
    }
}

/// The receiver's explicit answer to a transfer, recorded before any work.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(tag = "status", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum Receipt {
    /// Not decided yet: the receiver has not started.
    Pending,
    /// All receipt checks passed; the receiver's body ran.
    Accepted,
    /// A receipt check failed; the receiver's body did not run.
    Rejected {
        /// Why.
        reason: RejectReason,
    },
    /// The transfer waits for a person's decision: a receipt check failed
    /// on an agent whose rejections escalate, a tool failed under an
    /// `escalate` fallback, or an agent asked. The run is suspended.
    Escalated {
        /// Why.
        reason: Escalation,
    },
    /// A person approved the escalated transfer (as it was, or edited and
    /// checked again); the receiver's body ran.
    Approved {
        /// Who decided.
        by: String,
        /// Whether the payload was edited.
        edited: bool,
    },
    /// Audit mode only: checks failed that enforcement would have stopped
    /// the transfer for, and the receiver's body ran anyway. Every failed
    /// check found, in the order the checks run.
    Audited {
        /// What enforcement would have rejected the transfer for.
        reasons: Vec<RejectReason>,
    },
    /// Not an answer before work: the outcome of the receiver's turn on
    /// this transfer, which failed and stopped the run (a tool failure, the
    /// agent's error, a broken post-condition, a timeout, a spent budget).
    /// Recorded on a redelivery of the transfer, with the turn's tool calls.
    TurnFailed {
        /// What stopped the run.
        error: String,
    },
}

/// Why a transfer waits for a person's decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "cause", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum Escalation {
    /// A receipt check failed on an agent whose rejections escalate.
    Rejected {
        /// The check that failed.
        reason: RejectReason,
    },
    /// A tool failed under an `escalate` fallback during the receiver's turn.
    ToolFailed {
        /// The tool's error.
        error: crate::spec::ToolError,
    },
    /// The receiver asked for a decision ([`Reject::escalate`](crate::Reject::escalate)).
    Requested {
        /// What it asked.
        question: String,
    },
}

impl fmt::Display for Escalation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Escalation::Rejected { reason } => write!(f, "{reason}"),
            Escalation::ToolFailed { error } => write!(f, "{error}"),
            Escalation::Requested { question } => write!(f, "the agent asks: {question}"),
        }
    }
}

// Written by hand: serde ignores `deny_unknown_fields` on the unit
// variants of an internally tagged enum, and a receipt read back must not
// lose a field silently.
impl<'de> Deserialize<'de> for Receipt {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        #[derive(Deserialize)]
        #[serde(rename_all = "snake_case")]
        enum Status {
            Pending,
            Accepted,
            Rejected,
            Escalated,
            Approved,
            Audited,
            TurnFailed,
        }
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Wire {
            status: Status,
            reason: Option<serde_json::Value>,
            by: Option<String>,
            edited: Option<bool>,
            error: Option<String>,
            reasons: Option<Vec<RejectReason>>,
        }
        let wire = Wire::deserialize(d)?;
        let reason = |v: Option<serde_json::Value>| -> Result<serde_json::Value, D::Error> {
            v.ok_or_else(|| D::Error::missing_field("reason"))
        };
        if wire.error.is_some() && !matches!(wire.status, Status::TurnFailed) {
            return Err(D::Error::custom(
                "only a `turn_failed` receipt carries an `error`",
            ));
        }
        if wire.reasons.is_some() && !matches!(wire.status, Status::Audited) {
            return Err(D::Error::custom(
                "only an `audited` receipt carries `reasons`",
            ));
        }
        let only_status = |w: &Wire| w.reason.is_none() && w.by.is_none() && w.edited.is_none();
        match wire.status {
            Status::Pending if only_status(&wire) => Ok(Receipt::Pending),
            Status::Accepted if only_status(&wire) => Ok(Receipt::Accepted),
            Status::Rejected if wire.by.is_none() && wire.edited.is_none() => {
                Ok(Receipt::Rejected {
                    reason: serde_json::from_value(reason(wire.reason)?)
                        .map_err(D::Error::custom)?,
                })
            }
            Status::Escalated if wire.by.is_none() && wire.edited.is_none() => {
                Ok(Receipt::Escalated {
                    reason: serde_json::from_value(reason(wire.reason)?)
                        .map_err(D::Error::custom)?,
                })
            }
            Status::Audited if only_status(&wire) => Ok(Receipt::Audited {
                reasons: wire
                    .reasons
                    .ok_or_else(|| D::Error::missing_field("reasons"))?,
            }),
            Status::TurnFailed if only_status(&wire) => Ok(Receipt::TurnFailed {
                error: wire.error.ok_or_else(|| D::Error::missing_field("error"))?,
            }),
            Status::Approved if wire.reason.is_none() => Ok(Receipt::Approved {
                by: wire.by.ok_or_else(|| D::Error::missing_field("by"))?,
                edited: wire
                    .edited
                    .ok_or_else(|| D::Error::missing_field("edited"))?,
            }),
            _ => Err(D::Error::custom(
                "a receipt carries only the fields of its status",
            )),
        }
    }
}

/// One endpoint of a transfer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Endpoint {
    /// The caller of `run`: the transfer of the workflow input.
    Start,
    /// An agent, by name.
    Agent(Cow<'static, str>),
    /// The end of the run: the transfer of the workflow output.
    End,
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Start => f.write_str("START"),
            Endpoint::Agent(name) => f.write_str(name),
            Endpoint::End => f.write_str("END"),
        }
    }
}

/// A transfer as the executor witnessed it: who sent what to whom, and the answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TransferRecord {
    /// The run this transfer belongs to.
    pub run_id: u64,
    /// Position in the run, from 0.
    pub seq: u32,
    /// The number of agent turns completed before this transfer.
    pub hop: u32,
    /// The sender.
    pub from: Endpoint,
    /// The receiver.
    pub to: Endpoint,
    /// The Rust type of the payload.
    pub payload_type: Cow<'static, str>,
    /// The payload handed over, as JSON text (decoded from the canonical
    /// bytes recorded at the handoff).
    pub payload: String,
    /// The receiver's answer.
    pub receipt: Receipt,
    /// Microseconds since the run started.
    pub at_us: u64,
    /// The same transfer delivered again after an escalation (not a new
    /// handoff).
    pub redelivery: bool,
    /// The sender's turn that produced this transfer, when it called tools
    /// or charged usage.
    pub turn: Option<TurnRecord>,
    /// Where the transfer stands in a fan-out (its branch and parent, or
    /// the join); absent outside fan-outs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lineage: Option<crate::spec::Lineage>,
}

/// A record that cannot be given back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// There is no record with this sequence number.
    #[error("no record #{0}")]
    NoSuchRecord(usize),
    /// The recorded bytes could not be decoded (a bug: please report it).
    #[error("record #{seq} could not be decoded: {error}")]
    Undecodable {
        /// The record's sequence number.
        seq: usize,
        /// The decoder's message.
        error: String,
    },
}

/// What happened during one agent turn besides its handoff: the tool calls,
/// the model calls and the usage charged. Kept only for turns that have any.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TurnRecord {
    /// The agent.
    pub agent: Cow<'static, str>,
    /// The sequence number of the transfer the turn worked on.
    pub input_seq: u32,
    /// Every tool call, in the order they started.
    pub tool_calls: Vec<crate::spec::ToolCallRecord>,
    /// Every model call, in the order they started (absent when none: the
    /// records and hashes of turns without model calls are unchanged).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub model_calls: Vec<crate::spec::ModelCallRecord>,
    /// Tokens and cost the turn charged.
    pub usage: crate::spec::Usage,
    /// The open questions the turn received and handed to the caller with
    /// the workflow output (an output that is not a handoff cannot carry
    /// them): the run's unresolved uncertainty, never dropped silently.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unresolved: Vec<String>,
    /// What the turn did with leases: the renewals it asked for with their
    /// answers, the leases it revoked (absent when none: the records and
    /// hashes of other turns are unchanged).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub leases: Vec<crate::spec::LeaseAct>,
}

/// How a record's payload bytes are encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PayloadFormat {
    /// MessagePack with field names (the canonical form).
    Msgpack,
    /// JSON text (for values MessagePack cannot hold faithfully).
    Json,
}

/// A person's decision on a suspended run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "decision", rename_all = "snake_case", deny_unknown_fields)]
pub enum Decision {
    /// Deliver the transfer as it is; the receiver's turn runs.
    Approve {
        /// Who decided.
        by: String,
    },
    /// Deliver this payload instead; it is validated against the
    /// receiver's input schema and goes through the receipt checks again.
    Edit {
        /// Who decided.
        by: String,
        /// The edited payload.
        payload: serde_json::Value,
    },
    /// Reject the transfer; the run stops with the person's reason.
    Reject {
        /// Who decided.
        by: String,
        /// Why.
        note: String,
    },
}
