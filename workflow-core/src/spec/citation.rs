//! What backs an evidence item: a citation of a witness in the run's own
//! record, which the receiver checks at the receipt instead of taking the
//! sender's word for it.

use std::borrow::Cow;
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A witness in this run's record that backs an evidence item, checked at
/// the receipt: the cited tool call or transfer must be in the run's
/// record, must have succeeded, and its digest must match.
///
/// On the wire, an object tagged by `kind`:
/// `{"kind": "tool_call", "tool": "describe_vpcs", "turn": 3, "index": 0,
/// "digest": "9f86…"}` or `{"kind": "record", "seq": 2, "digest": "…"}`.
///
/// A branch of a fan-out is cited by its outcome record (a `record`
/// citation): what a join's evidence cites to resolve a disagreement among
/// the branches' verdicts (`Disagreement::resolution`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum Citation {
    /// A tool call of this run, as its [`CallId`](crate::tool::CallId)
    /// names it within the run, with the digest of its result.
    ToolCall {
        /// The tool called.
        tool: Cow<'static, str>,
        /// The turn that made the call: the sequence number of the record
        /// of its outcome (the handoff it produced).
        turn: u32,
        /// The call's position in its turn, from 0.
        index: u32,
        /// The SHA-256 of the call's result as recorded (its JSON text),
        /// hex-encoded.
        digest: String,
    },
    /// A transfer record of this run, with the digest of its payload.
    Record {
        /// The record's sequence number in the run.
        seq: u32,
        /// The SHA-256 of the record's payload as JSON text, hex-encoded.
        digest: String,
    },
}

impl Citation {
    /// A citation of tool call `index` of turn `turn`, whose recorded result
    /// has digest `digest`. An agent rarely writes one by hand:
    /// [`Context::citation`](crate::Context::citation) and
    /// [`Context::evidence_from`](crate::Context::evidence_from) take it
    /// from the turn's record.
    pub fn tool_call(
        tool: impl Into<Cow<'static, str>>,
        turn: u32,
        index: u32,
        digest: impl Into<String>,
    ) -> Self {
        Citation::ToolCall {
            tool: tool.into(),
            turn,
            index,
            digest: digest.into(),
        }
    }

    /// A citation of transfer record `seq`, whose payload (as JSON text) has
    /// digest `digest`.
    pub fn record(seq: u32, digest: impl Into<String>) -> Self {
        Citation::Record {
            seq,
            digest: digest.into(),
        }
    }
}

impl Citation {
    /// A citation of transfer record `seq`, whose payload is `payload`: the
    /// digest is taken of its JSON text (`serde_json::to_string`), which is
    /// the text the record gives back.
    pub fn record_of(seq: u32, payload: &impl Serialize) -> Result<Self, serde_json::Error> {
        let text = serde_json::to_string(payload)?;
        // The encoder's digest (`encode::digest`), which this layer cannot
        // import: the same SHA-256, hex-encoded.
        use sha2::Digest;
        let digest = hex::encode(sha2::Sha256::digest(text.as_bytes()));
        Ok(Citation::record(seq, digest))
    }
}

impl fmt::Display for Citation {
    /// `tool call describe_vpcs (turn #3, call 0)` or `record #2`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Citation::ToolCall {
                tool, turn, index, ..
            } => write!(f, "tool call `{tool}` (turn #{turn}, call {index})"),
            Citation::Record { seq, .. } => write!(f, "record #{seq}"),
        }
    }
}
