//! The run's record as the witness an evidence item cites: a citation is
//! checked against the tool calls and transfers the transcript holds.

use std::borrow::Cow;

use crate::run::Transcript;
use crate::spec::{Citation, Evidence, RejectReason, ToolCallRecord, ToolErrorKind, ToolOutcome};

impl Transcript {
    /// Tool call `index` of the turn whose outcome record is `turn`, as the
    /// run's record holds it.
    pub fn tool_call(&self, turn: u32, index: u32) -> Option<&ToolCallRecord> {
        self.turns
            .iter()
            .filter(|(at, _)| *at == turn)
            .flat_map(|(_, t)| t.tool_calls.iter())
            .find(|c| c.index == index)
    }
}

/// What is wrong with `citation` of `evidence` against the run's record
/// before entry `before` (the transfer being received): the witness must
/// exist, must be the one cited (tool, digest), and must have succeeded;
/// evidence marked complete must not cite a partial or empty result.
pub(crate) fn check_citation(
    transcript: &Transcript,
    evidence: &Evidence,
    citation: &Citation,
    before: usize,
) -> Option<RejectReason> {
    let named = || citation.to_string();
    let not_found = || RejectReason::CitationNotFound { citation: named() };
    match citation {
        Citation::ToolCall {
            tool,
            turn,
            index,
            digest,
        } => {
            // The sender's own turn is recorded at `before`; later turns
            // have not happened.
            if *turn as usize > before {
                return Some(not_found());
            }
            let Some(call) = transcript.tool_call(*turn, *index) else {
                return Some(not_found());
            };
            if call.tool != *tool {
                return Some(mismatch(named(), "tool", &call.tool));
            }
            match &call.outcome {
                ToolOutcome::Ok {
                    digest: recorded, ..
                } if recorded != digest => Some(mismatch(named(), "digest", recorded)),
                ToolOutcome::Ok { .. } => None,
                ToolOutcome::Failed { error }
                    if evidence.complete
                        && matches!(error.kind, ToolErrorKind::Partial | ToolErrorKind::Empty) =>
                {
                    Some(RejectReason::CompleteOnPartial {
                        citation: named(),
                        error: error.to_string(),
                    })
                }
                ToolOutcome::Failed { error } => Some(RejectReason::CitationFailed {
                    citation: named(),
                    error: error.to_string(),
                }),
            }
        }
        Citation::Record { seq, digest } => {
            let seq = *seq as usize;
            if seq >= before {
                return Some(not_found());
            }
            let entry = transcript.entries.get(seq)?;
            if !entry.status.ran() {
                return Some(RejectReason::CitationFailed {
                    citation: named(),
                    error: format!(
                        "the transfer was not accepted (its receipt: {})",
                        entry.status.word()
                    ),
                });
            }
            let recorded = match transcript.payload(seq) {
                Ok(text) => crate::encode::digest(&text),
                Err(e) => {
                    return Some(RejectReason::CitationFailed {
                        citation: named(),
                        error: e.to_string(),
                    });
                }
            };
            (recorded != *digest).then(|| mismatch(named(), "digest", &recorded))
        }
    }
}

/// The citation names another `field` than the record holds: `recorded`.
fn mismatch(citation: String, field: &'static str, recorded: &str) -> RejectReason {
    RejectReason::CitationMismatch {
        citation,
        field: Cow::Borrowed(field),
        recorded: recorded.to_owned(),
    }
}
