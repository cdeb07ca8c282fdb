//! What the executor witnesses: receipts and transfer records.

use std::borrow::Cow;
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Why a receiver did not accept a transfer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "code", rename_all = "snake_case", deny_unknown_fields)]
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
    /// The contract delegates an authority the receiver does not own (only a
    /// hand-written workflow can get here: generated ones do not compile).
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
pub enum Escalation {
    /// A receipt check failed on an agent whose rejections escalate.
    Rejected {
        /// The check that failed.
        reason: RejectReason,
    },
    /// A tool failed under an `escalate` fallback during the receiver's turn.
    ToolFailed {
        /// The tool's error.
        error: crate::error::ToolError,
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

/// A record as kept during a run: compact, payload bytes in a shared buffer.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub(crate) hop: u32,
    pub(crate) edge: u16,
    pub(crate) status: Status,
    /// The same transfer again, after an escalation (not a new handoff).
    pub(crate) redelivery: bool,
    pub(crate) format: crate::canonical::Format,
    pub(crate) start: u32,
    pub(crate) end: u32,
    pub(crate) at_us: u64,
}

/// A receipt without its details: the reasons and decisions of the few
/// receipts that have them are kept beside the entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    Pending,
    Accepted,
    Rejected,
    Escalated,
    Approved,
    TurnFailed,
}

impl Status {
    /// The receiver's body ran (or runs) on this transfer.
    pub(crate) fn ran(self) -> bool {
        matches!(self, Status::Accepted | Status::Approved)
    }
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
    pub tool_calls: Vec<crate::tool::ToolCallRecord>,
    /// Every model call, in the order they started (absent when none: the
    /// records and hashes of turns without model calls are unchanged).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub model_calls: Vec<crate::model::ModelCallRecord>,
    /// Tokens and cost the turn charged.
    pub usage: crate::budget::Usage,
    /// The open questions the turn received and handed to the caller with
    /// the workflow output (an output that is not a handoff cannot carry
    /// them): the run's unresolved uncertainty, never dropped silently.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unresolved: Vec<String>,
}

/// Every transfer of one run, in order: the executor's witness.
#[derive(Debug, Clone)]
pub struct Transcript {
    pub(crate) run_id: u64,
    pub(crate) graph: &'static crate::Graph,
    pub(crate) entries: Vec<Entry>,
    pub(crate) bytes: Vec<u8>,
    /// The receipts with details (rejected, escalated, approved), by entry.
    pub(crate) notes: Vec<(u32, Receipt)>,
    /// The turns with tool calls or usage, by the entry each one produced
    /// (the transfer out of the turn; for a turn that stopped the run, the
    /// entry after the last one).
    pub(crate) turns: Vec<(u32, TurnRecord)>,
}

impl Transcript {
    pub(crate) fn new(run_id: u64, graph: &'static crate::Graph) -> Self {
        Transcript {
            run_id,
            graph,
            entries: Vec::with_capacity(32),
            bytes: Vec::with_capacity(4096),
            notes: Vec::new(),
            turns: Vec::new(),
        }
    }

    /// The run's id.
    pub fn run_id(&self) -> u64 {
        self.run_id
    }

    /// The number of transfers recorded.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The canonical bytes recorded for the `i`th transfer's payload:
    /// MessagePack with field names, or JSON text for a payload holding a
    /// 128-bit integer beyond 64 bits (see [`payload`](Self::payload)).
    pub fn payload_bytes(&self, i: usize) -> Option<&[u8]> {
        let e = self.entries.get(i)?;
        self.bytes.get(e.start as usize..e.end as usize)
    }

    /// The `i`th transfer's payload as JSON text: the same text
    /// `serde_json::to_string` gives for the value that was handed over.
    pub fn payload(&self, i: usize) -> Result<String, RecordError> {
        let e = self.entries.get(i).ok_or(RecordError::NoSuchRecord(i))?;
        let bytes = self.payload_bytes(i).ok_or(RecordError::NoSuchRecord(i))?;
        crate::canonical::to_json(e.format, bytes)
            .map_err(|error| RecordError::Undecodable { seq: i, error })
    }

    /// The `i`th entry and the edge it crossed.
    fn entry(&self, i: usize) -> Result<(&Entry, &'static crate::EdgeInfo), RecordError> {
        let e = self.entries.get(i).ok_or(RecordError::NoSuchRecord(i))?;
        let edge = self
            .graph
            .edges
            .get(e.edge as usize)
            .ok_or(RecordError::NoSuchRecord(i))?;
        Ok((e, edge))
    }

    /// The `i`th transfer, as a self-contained record.
    pub fn record(&self, i: usize) -> Result<TransferRecord, RecordError> {
        let (e, edge) = self.entry(i)?;
        Ok(TransferRecord {
            run_id: self.run_id,
            seq: i as u32,
            hop: e.hop,
            from: self.graph.endpoint(edge.from),
            to: self.graph.endpoint(edge.to),
            payload_type: Cow::Borrowed(edge.payload),
            payload: self.payload(i)?,
            receipt: self.receipt(i).ok_or(RecordError::NoSuchRecord(i))?,
            at_us: e.at_us,
            redelivery: e.redelivery,
            turn: self.turn(i).cloned(),
        })
    }

    /// The `i`th transfer as the ledger stores it, chained to `prev_hash`.
    pub(crate) fn ledger_record(
        &self,
        i: usize,
        prev_hash: &str,
    ) -> Result<crate::ledger::LedgerRecord, RecordError> {
        let (e, edge) = self.entry(i)?;
        let (trace_id, span_id) = crate::telemetry::trace_ids();
        let mut record = crate::ledger::LedgerRecord {
            workflow: self.graph.name.to_owned(),
            run_id: self.run_id,
            seq: i as u32,
            hop: e.hop,
            from: self.graph.endpoint(edge.from),
            to: self.graph.endpoint(edge.to),
            payload_type: edge.payload.to_owned(),
            payload_format: e.format,
            payload: hex::encode(self.payload_bytes(i).ok_or(RecordError::NoSuchRecord(i))?),
            receipt: self.receipt(i).ok_or(RecordError::NoSuchRecord(i))?,
            at_us: e.at_us,
            redelivery: e.redelivery,
            turn: self.turn(i).cloned(),
            trace_id,
            span_id,
            prev_hash: prev_hash.to_owned(),
            hash: String::new(),
        };
        record.hash = record.compute_hash();
        Ok(record)
    }

    /// All transfers, as self-contained records; the first that cannot be
    /// read back is an error, never a gap.
    pub fn records(&self) -> Result<Vec<TransferRecord>, RecordError> {
        (0..self.len()).map(|i| self.record(i)).collect()
    }

    /// The receipt of the `i`th transfer.
    pub fn receipt(&self, i: usize) -> Option<Receipt> {
        Some(match self.entries.get(i)?.status {
            Status::Pending => Receipt::Pending,
            Status::Accepted => Receipt::Accepted,
            Status::Rejected | Status::Escalated | Status::Approved | Status::TurnFailed => self
                .notes
                .iter()
                .rev()
                .find(|(at, _)| *at as usize == i)?
                .1
                .clone(),
        })
    }

    /// Marks entry `i` with a receipt that has details.
    pub(crate) fn note(&mut self, i: usize, receipt: Receipt) {
        let status = match &receipt {
            Receipt::Pending => Status::Pending,
            Receipt::Accepted => Status::Accepted,
            Receipt::Rejected { .. } => Status::Rejected,
            Receipt::Escalated { .. } => Status::Escalated,
            Receipt::Approved { .. } => Status::Approved,
            Receipt::TurnFailed { .. } => Status::TurnFailed,
        };
        if let Some(e) = self.entries.get_mut(i) {
            e.status = status;
            if status != Status::Pending && status != Status::Accepted {
                self.notes.push((i as u32, receipt));
            }
        }
    }

    /// The last rejection or escalation reason recorded, if any.
    pub fn last_rejection(&self) -> Option<&RejectReason> {
        self.notes.iter().rev().find_map(|(_, r)| match r {
            Receipt::Rejected { reason } => Some(reason),
            Receipt::Escalated {
                reason: Escalation::Rejected { reason },
            } => Some(reason),
            _ => None,
        })
    }

    /// The turn that produced entry `i` (its tool calls and usage), if it
    /// had any.
    pub fn turn(&self, i: usize) -> Option<&TurnRecord> {
        self.turns
            .iter()
            .find(|(at, _)| *at as usize == i)
            .map(|(_, t)| t)
    }

    /// The open questions handed to the caller with the workflow output
    /// (received by the last agent, neither resolved nor escalated).
    pub fn unresolved(&self) -> &[String] {
        self.turns
            .iter()
            .rev()
            .find_map(|(_, t)| (!t.unresolved.is_empty()).then_some(t.unresolved.as_slice()))
            .unwrap_or(&[])
    }

    /// Every turn that made tool calls or charged usage, with the sequence
    /// number of the transfer it produced (or `len()` for a turn that
    /// stopped the run).
    pub fn turns(&self) -> impl Iterator<Item = (usize, &TurnRecord)> {
        self.turns.iter().map(|(at, t)| (*at as usize, t))
    }
}

impl fmt::Display for Transcript {
    /// One line per transfer: `#seq hop from -> to [receipt] payload`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for i in 0..self.len() {
            let r = match self.record(i) {
                Ok(r) => r,
                Err(e) => {
                    writeln!(f, "#{i} {e}")?;
                    continue;
                }
            };
            let receipt = match &r.receipt {
                Receipt::Pending => "pending".to_owned(),
                Receipt::Accepted => "accepted".to_owned(),
                Receipt::Rejected { reason } => format!("REJECTED: {reason}"),
                Receipt::Escalated { reason } => format!("ESCALATED: {reason}"),
                Receipt::Approved { by, edited } => {
                    format!("approved by {by}{}", if *edited { ", edited" } else { "" })
                }
                Receipt::TurnFailed { error } => format!("TURN FAILED: {error}"),
            };
            writeln!(
                f,
                "#{seq} hop {hop} {from} -> {to} [{receipt}] {ty} {payload}",
                seq = r.seq,
                hop = r.hop,
                from = r.from,
                to = r.to,
                ty = r.payload_type,
                payload = r.payload
            )?;
        }
        Ok(())
    }
}

/// A readable account of one run: the path taken, how it ended, and per
/// agent its turns, tool calls, tokens and time. `Display` prints it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunSummary {
    /// The run.
    pub run_id: u64,
    /// The agents in the order their turns ran.
    pub path: Vec<String>,
    /// How the run ended (or where it stands).
    pub outcome: String,
    /// Per agent, in the order they first ran.
    pub agents: Vec<AgentSummary>,
}

/// One agent's share of a run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentSummary {
    /// The agent.
    pub name: String,
    /// Turns it ran.
    pub turns: u32,
    /// Tool calls it made.
    pub tool_calls: u32,
    /// Of those, the ones that failed.
    pub failed_tool_calls: u32,
    /// Tokens it charged (prompt and completion).
    pub tokens: u64,
    /// Microseconds from its receipts to what its turns produced.
    pub time_us: u64,
}

impl Transcript {
    /// A readable account of the run so far.
    pub fn summary(&self) -> RunSummary {
        let mut path = Vec::new();
        let mut agents: Vec<AgentSummary> = Vec::new();
        let by_name = |name: &str, agents: &mut Vec<AgentSummary>| -> usize {
            match agents.iter().position(|a| a.name == name) {
                Some(i) => i,
                None => {
                    agents.push(AgentSummary {
                        name: name.to_owned(),
                        ..AgentSummary::default()
                    });
                    agents.len() - 1
                }
            }
        };
        for (i, e) in self.entries.iter().enumerate() {
            let Some(edge) = self.graph.edges.get(e.edge as usize) else {
                continue;
            };
            // A handoff returned to its sender: the sender's turn ran again
            // (on its earlier input), producing the next entry.
            let returned_to = match (e.status, edge.from, self.entries.get(i + 1)) {
                (Status::Rejected, crate::graph::Node::Agent(_), Some(next))
                    if self.graph.edges.get(next.edge as usize).map(|n| n.from)
                        == Some(edge.from) =>
                {
                    Some(edge.from)
                }
                _ => None,
            };
            if let Some(sender) = returned_to {
                let name = self.graph.node_name(sender);
                path.push(name.to_owned());
                let a = by_name(name, &mut agents);
                agents[a].turns += 1;
                if let Some(next) = self.entries.get(i + 1) {
                    agents[a].time_us += next.at_us.saturating_sub(e.at_us);
                }
            }
            if e.status.ran()
                && let crate::graph::Node::Agent(_) = edge.to
            {
                let name = self.graph.node_name(edge.to);
                path.push(name.to_owned());
                let a = by_name(name, &mut agents);
                agents[a].turns += 1;
                if let Some(next) = self.entries.get(i + 1) {
                    agents[a].time_us += next.at_us.saturating_sub(e.at_us);
                }
            }
        }
        for (_, turn) in &self.turns {
            let a = by_name(&turn.agent, &mut agents);
            agents[a].tool_calls += turn.tool_calls.len() as u32;
            agents[a].failed_tool_calls += turn
                .tool_calls
                .iter()
                .filter(|c| matches!(c.outcome, crate::tool::ToolOutcome::Failed { .. }))
                .count() as u32;
            agents[a].tokens += turn.usage.total_tokens();
        }
        let last = self.len().checked_sub(1);
        let outcome = match last.and_then(|i| Some((self.record(i).ok()?, i))) {
            None => "no transfer recorded".to_owned(),
            Some((r, _)) => match (&r.receipt, &r.to) {
                (Receipt::Accepted, Endpoint::End) => "completed".to_owned(),
                (Receipt::Rejected { reason }, _) => {
                    format!("rejected at {} -> {}: {reason}", r.from, r.to)
                }
                (Receipt::Escalated { reason }, _) => {
                    format!(
                        "suspended at {} -> {}, waiting for a decision: {reason}",
                        r.from, r.to
                    )
                }
                (Receipt::TurnFailed { error }, _) => format!("failed in {}: {error}", r.to),
                _ => format!("in progress: {} is next", r.to),
            },
        };
        RunSummary {
            run_id: self.run_id,
            path,
            outcome,
            agents,
        }
    }
}

impl fmt::Display for RunSummary {
    /// `run N: a -> b -> c, completed`, then one line per agent.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "run {}: {} ({} turns), {}",
            self.run_id,
            if self.path.is_empty() {
                "no agent ran".to_owned()
            } else {
                self.path.join(" -> ")
            },
            self.path.len(),
            self.outcome
        )?;
        for a in &self.agents {
            write!(
                f,
                "  {:<16} {} turn{}, {} tool call{}",
                a.name,
                a.turns,
                if a.turns == 1 { "" } else { "s" },
                a.tool_calls,
                if a.tool_calls == 1 { "" } else { "s" },
            )?;
            if a.failed_tool_calls > 0 {
                write!(f, " ({} failed)", a.failed_tool_calls)?;
            }
            if a.tokens > 0 {
                write!(f, ", {} tokens", a.tokens)?;
            }
            writeln!(f, ", {:.3} ms", a.time_us as f64 / 1000.0)?;
        }
        Ok(())
    }
}
