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
}

// Written by hand: serde ignores `deny_unknown_fields` on the unit
// variants of an internally tagged enum, and a receipt read back must not
// lose a field silently.
impl<'de> Deserialize<'de> for Receipt {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(rename_all = "snake_case")]
        enum Status {
            Pending,
            Accepted,
            Rejected,
        }
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Wire {
            status: Status,
            reason: Option<RejectReason>,
        }
        let wire = Wire::deserialize(d)?;
        match (wire.status, wire.reason) {
            (Status::Pending, None) => Ok(Receipt::Pending),
            (Status::Accepted, None) => Ok(Receipt::Accepted),
            (Status::Rejected, Some(reason)) => Ok(Receipt::Rejected { reason }),
            (Status::Rejected, None) => Err(serde::de::Error::missing_field("reason")),
            (_, Some(_)) => Err(serde::de::Error::unknown_field("reason", &["status"])),
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
    pub(crate) format: crate::canonical::Format,
    pub(crate) start: u32,
    pub(crate) end: u32,
    pub(crate) at_us: u64,
}

/// A receipt without its reason: a run stops at its first rejection, so
/// the one reason is kept once, beside the entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    Pending,
    Accepted,
    Rejected,
}

/// Every transfer of one run, in order: the executor's witness.
#[derive(Debug, Clone)]
pub struct Transcript {
    pub(crate) run_id: u64,
    pub(crate) graph: &'static crate::Graph,
    pub(crate) entries: Vec<Entry>,
    pub(crate) bytes: Vec<u8>,
    /// The reason of the one rejected entry, if any.
    pub(crate) rejection: Option<RejectReason>,
}

impl Transcript {
    pub(crate) fn new(run_id: u64, graph: &'static crate::Graph) -> Self {
        Transcript {
            run_id,
            graph,
            entries: Vec::with_capacity(32),
            bytes: Vec::with_capacity(4096),
            rejection: None,
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
            Status::Rejected => Receipt::Rejected {
                reason: self.rejection.clone()?,
            },
        })
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
