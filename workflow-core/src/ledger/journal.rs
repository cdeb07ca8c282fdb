//! Tool calls already recorded, served instead of calling the tools again.

use std::collections::HashMap;
use std::sync::Arc;

use crate::ledger::LedgerRecord;
use crate::spec::{ToolCallRecord, ToolOutcome};
use crate::spec::{ToolError, ToolErrorKind};

use crate::ledger::{Difference, Divergence, FirstDivergence};

/// Tool calls already recorded, served instead of calling the tools again:
/// in a replay, every call of the run; after a crash, the calls the cut
/// turn made before it. Cloned for each branch of a fan-out (whose turns
/// have logs of their own).
#[derive(Clone)]
pub(crate) struct RecordedCalls {
    /// By (turn, index): the turn is the sequence number its outcome takes.
    calls: HashMap<(u32, u32), ToolCallRecord>,
    /// In a replay: a call that is not the recorded one is a divergence.
    /// Without it (a resumed turn), such a call is made.
    replay: Option<Replaying>,
}

/// What a replay's tool calls are checked against.
#[derive(Clone)]
struct Replaying {
    divergence: Arc<FirstDivergence>,
    /// How many records the recording holds: a turn whose outcome would
    /// come after them is past its end.
    end: u32,
    /// The recording stops while its run was still going.
    unfinished: bool,
}

/// How a tool call is answered.
pub(crate) enum Served {
    /// With its recorded outcome.
    Call(ToolCallRecord),
    /// It is not the recorded call: a replay's divergence.
    Diverged(ToolError),
    /// By the tool: nothing is recorded for it.
    Live,
}

impl RecordedCalls {
    /// The calls a resumed turn (at `turn_seq`) made before the crash.
    pub(crate) fn resumed(turn_seq: u32, calls: Vec<ToolCallRecord>) -> Self {
        RecordedCalls {
            calls: calls
                .into_iter()
                .map(|c| ((turn_seq, c.index), c))
                .collect(),
            replay: None,
        }
    }

    /// The calls a canary's recording holds (one turn, at sequence 0):
    /// served as a replay's are, a call that is not the recorded one is
    /// never made.
    pub(crate) fn canary(calls: Vec<ToolCallRecord>) -> Self {
        RecordedCalls {
            calls: calls.into_iter().map(|c| ((0, c.index), c)).collect(),
            replay: Some(Replaying {
                divergence: Arc::default(),
                end: 1,
                unfinished: false,
            }),
        }
    }

    pub(crate) fn replaying(
        records: &[LedgerRecord],
        divergence: Arc<FirstDivergence>,
        unfinished: bool,
    ) -> Self {
        let calls = records
            .iter()
            .filter_map(|r| Some((r.seq, r.turn.as_ref()?)))
            .flat_map(|(seq, turn)| {
                turn.tool_calls
                    .iter()
                    .map(move |c| ((seq, c.index), c.clone()))
            })
            .collect();
        RecordedCalls {
            calls,
            replay: Some(Replaying {
                divergence,
                end: records.len() as u32,
                unfinished,
            }),
        }
    }

    /// A resumed turn's (at `turn_seq`) journaled calls from call `index`
    /// on, in order (none in a replay).
    pub(crate) fn journaled_from(&self, turn_seq: u32, index: u32) -> Vec<ToolCallRecord> {
        if self.replay.is_some() {
            return Vec::new();
        }
        let mut calls: Vec<ToolCallRecord> = self
            .calls
            .iter()
            .filter(|((seq, i), _)| *seq == turn_seq && *i >= index)
            .map(|(_, c)| c.clone())
            .collect();
        calls.sort_by_key(|c| c.index);
        calls
    }

    /// The answer to call `index` of the turn at `turn_seq`, of `tool` with
    /// `arguments` (JSON text).
    pub(crate) fn serve(
        &self,
        turn_seq: u32,
        index: u32,
        tool: &'static str,
        arguments: &str,
    ) -> Served {
        let recorded = self.calls.get(&(turn_seq, index));
        if let Some(call) = recorded
            && call.tool == tool
            && call.arguments == arguments
        {
            return Served::Call(call.clone());
        }
        let Some(replay) = &self.replay else {
            return Served::Live;
        };
        let past_the_end = turn_seq >= replay.end;
        if !(past_the_end && replay.unfinished) {
            replay.divergence.note(Divergence {
                seq: turn_seq,
                difference: if past_the_end {
                    Difference::WentOn
                } else {
                    Difference::ToolCall { index }
                },
                recorded: recorded.map(|c| call_json(&c.tool, &c.arguments)),
                replayed: Some(call_json(tool, arguments)),
            });
        }
        Served::Diverged(ToolError::new(
            tool,
            if past_the_end {
                "replay: the recording ends before this call; it was not made"
            } else {
                "replay: this call is not the one recorded at its place; it was not made"
            },
        ))
    }

    /// The recorded outcome of `call` (call `call.index` of the turn at
    /// `turn_seq`), read as the tool's output type `O`.
    pub(crate) fn outcome<O: serde::de::DeserializeOwned>(
        &self,
        tool: &'static str,
        turn_seq: u32,
        call: &ToolCallRecord,
    ) -> Result<(O, String), ToolError> {
        let result = match &call.outcome {
            ToolOutcome::Failed { error } => return Err(error.clone()),
            ToolOutcome::Ok { result, .. } => result,
        };
        crate::encode::from_json_text(result)
            .map(|out| (out, result.clone()))
            .map_err(|e| {
                let error = format!("the recorded result does not read as the tool's output: {e}");
                if let Some(replay) = &self.replay {
                    replay.divergence.note(Divergence {
                        seq: turn_seq,
                        difference: Difference::ToolCall { index: call.index },
                        recorded: Some(result.clone()),
                        replayed: Some(serde_json::Value::String(error.clone()).to_string()),
                    });
                }
                ToolError::of(tool, ToolErrorKind::Schema, error)
            })
    }
}

/// A call as JSON text: `{"tool": .., "arguments": ..}`.
pub(crate) fn call_json(tool: &str, arguments: &str) -> String {
    let arguments = serde_json::from_str::<serde_json::Value>(arguments)
        .unwrap_or_else(|_| serde_json::Value::String(arguments.to_owned()));
    serde_json::json!({ "tool": tool, "arguments": arguments }).to_string()
}
