//! Replaying a recorded run (guarantee 12): the run again from its recorded
//! workflow input, every tool response served from the record, each new
//! transfer compared with the recorded one; the first transition where they
//! part is reported.
//!
//! The comparison is a ledger: the replayed run commits its records to it
//! as any run commits to its ledger, and a record that differs from the one
//! recorded at its place is refused, which stops the replay right there. No
//! agent works on a transfer the recording does not have.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::error::{RunError, ToolError, ToolErrorKind};
use crate::escalation::Decision;
use crate::executor::{RecordedPayload, Workflow};
use crate::ledger::{Ledger, LedgerError, LedgerRecord, Tampering};
use crate::record::{Endpoint, Receipt, RejectReason, Transcript};
use crate::runtime::{Limits, Runtime};
use crate::session::Executor;
use crate::tool::{ToolCallRecord, ToolOutcome};

/// What [`Executor::replay`] found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayReport {
    /// The workflow that recorded the run.
    pub workflow: String,
    /// The run.
    pub run_id: u64,
    /// How many transitions the recording holds.
    pub transitions: u32,
    /// The recording stops while the run was still going (a receiver was
    /// working when its process died, and the run was never resumed): the
    /// replay stops there too.
    pub unfinished: bool,
    /// The first transition where the replay parts from the recording;
    /// `None` when it replays identically.
    pub divergence: Option<Divergence>,
}

impl ReplayReport {
    /// Whether the run replays identically.
    pub fn is_identical(&self) -> bool {
        self.divergence.is_none()
    }
}

/// The first transition where a replay parts from its recording.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Divergence {
    /// The transition's sequence number.
    pub seq: u32,
    /// What differs.
    pub difference: Difference,
    /// The recorded side, as JSON text (`None` when the recording has
    /// nothing there).
    pub recorded: Option<String>,
    /// The replayed side, as JSON text (`None` when the replay has nothing
    /// there).
    pub replayed: Option<String>,
}

/// What differs at a [`Divergence`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "what", rename_all = "snake_case")]
pub enum Difference {
    /// The sender or the receiver.
    Route,
    /// The payload's type.
    PayloadType,
    /// One transfer is a redelivery (after an escalation or a failed turn),
    /// the other a new handoff.
    Redelivery,
    /// A tool call of the turn that produced the transfer: another tool,
    /// other arguments, a call the recording does not have or one it has
    /// that the replay did not make.
    ToolCall {
        /// The call's index in its turn.
        index: u32,
    },
    /// The payload's canonical bytes.
    Payload,
    /// The rest of the turn that produced the transfer (usage, questions
    /// handed to the caller).
    Turn,
    /// The receiver's receipt.
    Receipt,
    /// The replayed run stopped before this recorded transition.
    Stopped {
        /// What stopped it.
        error: String,
    },
    /// The replayed run went on past the end of the recording.
    WentOn,
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Difference::Route => f.write_str("the sender or receiver differs"),
            Difference::PayloadType => f.write_str("the payload type differs"),
            Difference::Redelivery => f.write_str("one is a redelivery, the other is not"),
            Difference::ToolCall { index } => write!(f, "tool call {index} differs"),
            Difference::Payload => f.write_str("the payload differs"),
            Difference::Turn => f.write_str("the turn's usage or open questions differ"),
            Difference::Receipt => f.write_str("the receipt differs"),
            Difference::Stopped { error } => write!(f, "the replay stopped here: {error}"),
            Difference::WentOn => f.write_str("the replay goes on past the end of the recording"),
        }
    }
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "transition #{}: {}", self.seq, self.difference)?;
        let none = "(nothing)";
        write!(
            f,
            "\n  recorded: {}\n  replayed: {}",
            self.recorded.as_deref().unwrap_or(none),
            self.replayed.as_deref().unwrap_or(none)
        )
    }
}

impl fmt::Display for ReplayReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.divergence {
            None if self.unfinished => write!(
                f,
                "run {} replays identically for its {} recorded transitions (the recording stops mid-run)",
                self.run_id, self.transitions
            ),
            None => write!(
                f,
                "run {} replays identically ({} transitions)",
                self.run_id, self.transitions
            ),
            Some(d) => write!(f, "run {} diverges at {d}", self.run_id),
        }
    }
}

/// Records that cannot be replayed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    /// There are no records.
    #[error("there are no records to replay")]
    NoRecords,
    /// The records do not verify: a replay of them would prove nothing.
    #[error("run {run_id} does not verify: {tampering}")]
    Tampered {
        /// The run.
        run_id: u64,
        /// What `verify` found.
        tampering: Tampering,
    },
    /// The records were written by another workflow.
    #[error("run {run_id} was recorded by workflow `{recorded}`, not `{replaying}`")]
    OtherWorkflow {
        /// The run.
        run_id: u64,
        /// The workflow that recorded it.
        recorded: String,
        /// The workflow asked to replay it.
        replaying: &'static str,
    },
    /// [`Executor::replay_run`] on an executor without a ledger.
    #[error("no ledger is attached (`Executor::with_ledger`)")]
    NoLedger,
    /// The ledger could not give the run's records back.
    #[error("run {run_id} cannot be read: {error}")]
    Ledger {
        /// The run.
        run_id: u64,
        /// The ledger's error.
        error: String,
    },
    /// The recorded workflow input cannot be read as this workflow's input.
    #[error("run {run_id}'s recorded input does not read: {error}")]
    Input {
        /// The run.
        run_id: u64,
        /// Why.
        error: String,
    },
}

impl<W: Workflow> Executor<W> {
    /// Runs a recorded run again, from its recorded workflow input, with
    /// this executor's workflow, root invariants and limits: every tool
    /// response is served from the record instead of calling the tool, and
    /// each person's decision (approve, edit, reject) is taken again as
    /// recorded. Each new transfer is compared with the recorded one
    /// (sender and receiver, payload bytes, the turn's tool calls, receipt);
    /// the replay stops at the first that differs and reports it.
    ///
    /// A tool call whose tool or arguments differ from the recorded call at
    /// its place (the turn, the call's index) is a divergence, never a live
    /// call. The records are verified first.
    ///
    /// Deterministic when the agents are functions of their input, the
    /// pinned root and their tools' results (a clock an agent reads is not
    /// recorded). Build the executor with the root the run was recorded
    /// with: the root is not part of the record.
    pub async fn replay(&self, records: &[LedgerRecord]) -> Result<ReplayReport, ReplayError> {
        let first = records.first().ok_or(ReplayError::NoRecords)?;
        let run_id = first.run_id;
        if first.workflow != W::GRAPH.name {
            return Err(ReplayError::OtherWorkflow {
                run_id,
                recorded: first.workflow.clone(),
                replaying: W::GRAPH.name,
            });
        }
        crate::ledger::verify(run_id, records, None)
            .map_err(|tampering| ReplayError::Tampered { run_id, tampering })?;
        let input_error = |error: String| ReplayError::Input { run_id, error };
        if first.from != Endpoint::Start {
            return Err(input_error(format!(
                "record #0 comes from {}, not START",
                first.from
            )));
        }
        let bytes = first
            .payload_bytes()
            .map_err(|e| input_error(e.to_string()))?;
        let input: W::Input = RecordedPayload {
            format: first.payload_format,
            bytes: &bytes,
        }
        .decode()
        .map_err(input_error)?;

        let first_divergence = Arc::new(FirstDivergence::default());
        let comparison = Comparison::new(records, first_divergence.clone());
        let mut run = Runtime::<W>::new(
            self.root(),
            self.deps(),
            Limits {
                ledger: Some(&comparison),
                ..self.limits()
            },
        );
        run.transcript = Transcript::new(run_id, W::GRAPH);
        run.serve_recorded(RecordedCalls::replaying(
            records,
            first_divergence.clone(),
            comparison.unfinished,
        ));
        let mut state = W::start(input, &mut run);
        let stopped = loop {
            let ended = match state {
                Ok(state) => W::run_to_end(state, &mut run).await,
                Err(e) => Err(e),
            };
            match ended {
                Ok(_) => break None,
                Err(RunError::Suspended { .. }) if first_divergence.is_empty() => {
                    let next = records.get(run.transcript.len());
                    match next.and_then(recorded_decision) {
                        Some(decision) => state = decide_again(&mut run, decision),
                        None => break None,
                    }
                }
                Err(error) => break Some(error),
            }
        };

        let transitions = records.len() as u32;
        let unfinished = comparison.unfinished;
        let report = |divergence| ReplayReport {
            workflow: first.workflow.clone(),
            run_id,
            transitions,
            unfinished,
            divergence,
        };
        if let Some(divergence) = first_divergence.take() {
            return Ok(report(Some(divergence)));
        }
        let committed = comparison.committed();
        if committed < records.len() && !comparison.reached_end() {
            // The replay stopped short of the recording's end.
            let error = stopped.map_or_else(
                || "the run ended".to_owned(),
                |e| match e {
                    RunError::Suspended { agent, reason } => {
                        format!("the run was suspended at {agent}: {reason}")
                    }
                    e => e.to_string(),
                },
            );
            return Ok(report(Some(Divergence {
                seq: committed as u32,
                difference: Difference::Stopped { error },
                recorded: records.get(committed).map(summary),
                replayed: None,
            })));
        }
        Ok(report(None))
    }

    /// Replays run `run_id` of the attached ledger (see
    /// [`replay`](Self::replay)).
    pub async fn replay_run(&self, run_id: u64) -> Result<ReplayReport, ReplayError> {
        let ledger = self.ledger().ok_or(ReplayError::NoLedger)?;
        let records = ledger.records(run_id).map_err(|e| ReplayError::Ledger {
            run_id,
            error: e.to_string(),
        })?;
        self.replay(&records).await
    }
}

/// The decision a person took on an escalated transfer, as the redelivery
/// recorded after it shows it.
fn recorded_decision(record: &LedgerRecord) -> Option<Decision> {
    if !record.redelivery {
        return None;
    }
    match &record.receipt {
        Receipt::Approved { by, edited: false } => Some(Decision::Approve { by: by.clone() }),
        Receipt::Approved { by, edited: true } => Some(Decision::Edit {
            by: by.clone(),
            payload: serde_json::from_str(&record.payload_json().ok()?).ok()?,
        }),
        Receipt::Rejected {
            reason: RejectReason::HumanRejected { by, note },
        } => Some(Decision::Reject {
            by: by.clone(),
            note: note.clone(),
        }),
        _ => None,
    }
}

/// Takes `decision` on the suspended run's escalated last transfer again.
fn decide_again<W: Workflow>(
    run: &mut Runtime<'_, W>,
    decision: Decision,
) -> Result<W::State, RunError> {
    let last = run.transcript.len().saturating_sub(1);
    let (format, agent) = match run.transcript.entries.get(last) {
        Some(e) => match W::GRAPH.edges.get(e.edge as usize).map(|i| i.to) {
            Some(crate::Node::Agent(agent)) => (e.format, agent),
            _ => {
                return Err(RunError::Decision(
                    "the escalated transfer is not to an agent".into(),
                ));
            }
        },
        None => return Err(RunError::Decision("the run has no records".into())),
    };
    let bytes = run
        .transcript
        .payload_bytes(last)
        .unwrap_or_default()
        .to_vec();
    run.decide(
        agent,
        &RecordedPayload {
            format,
            bytes: &bytes,
        },
        decision,
    )
}

/// Where the first divergence found goes, by the tool calls or the
/// comparison of records, whichever sees one first.
#[derive(Default)]
struct FirstDivergence(Mutex<Option<Divergence>>);

impl FirstDivergence {
    fn note(&self, divergence: Divergence) {
        let mut slot = self.0.lock().unwrap_or_else(|p| p.into_inner());
        slot.get_or_insert(divergence);
    }

    fn is_empty(&self) -> bool {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).is_none()
    }

    fn take(&self) -> Option<Divergence> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

/// Tool calls already recorded, served instead of calling the tools again:
/// in a replay, every call of the run; after a crash, the calls the cut
/// turn made before it.
pub(crate) struct RecordedCalls {
    /// By (turn, index): the turn is the sequence number its outcome takes.
    calls: HashMap<(u32, u32), ToolCallRecord>,
    /// In a replay: a call that is not the recorded one is a divergence.
    /// Without it (a resumed turn), such a call is made.
    replay: Option<Replaying>,
}

/// What a replay's tool calls are checked against.
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

    fn replaying(
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
        serde_json::from_str(result)
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
fn call_json(tool: &str, arguments: &str) -> String {
    let arguments = serde_json::from_str::<serde_json::Value>(arguments)
        .unwrap_or_else(|_| serde_json::Value::String(arguments.to_owned()));
    serde_json::json!({ "tool": tool, "arguments": arguments }).to_string()
}

/// A record as JSON text, for a report: route, payload and receipt.
fn summary(r: &LedgerRecord) -> String {
    let payload = r
        .payload_json()
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .unwrap_or_else(|| serde_json::Value::String(r.payload.clone()));
    serde_json::json!({
        "from": r.from.to_string(),
        "to": r.to.to_string(),
        "payload_type": r.payload_type,
        "payload": payload,
        "receipt": r.receipt,
    })
    .to_string()
}

/// The first difference between a recorded record and the replayed one at
/// its place, in the order things happen: the route, the turn's tool
/// calls, the payload, the rest of the turn, the receipt.
fn compare(recorded: &LedgerRecord, replayed: &LedgerRecord) -> Option<Divergence> {
    let seq = recorded.seq;
    let at = |difference, recorded: String, replayed: String| {
        Some(Divergence {
            seq,
            difference,
            recorded: Some(recorded),
            replayed: Some(replayed),
        })
    };
    let route = |r: &LedgerRecord| {
        serde_json::json!({ "from": r.from.to_string(), "to": r.to.to_string() }).to_string()
    };
    if (&recorded.from, &recorded.to) != (&replayed.from, &replayed.to) {
        return at(Difference::Route, route(recorded), route(replayed));
    }
    if recorded.payload_type != replayed.payload_type {
        let name = |r: &LedgerRecord| serde_json::Value::String(r.payload_type.clone()).to_string();
        return at(Difference::PayloadType, name(recorded), name(replayed));
    }
    if recorded.redelivery != replayed.redelivery {
        let flag = |r: &LedgerRecord| serde_json::json!({ "redelivery": r.redelivery }).to_string();
        return at(Difference::Redelivery, flag(recorded), flag(replayed));
    }
    fn calls(r: &LedgerRecord) -> &[ToolCallRecord] {
        r.turn.as_ref().map_or(&[], |t| &t.tool_calls)
    }
    let (a, b) = (calls(recorded), calls(replayed));
    for i in 0..a.len().max(b.len()) {
        let (x, y) = (a.get(i), b.get(i));
        let same = match (x, y) {
            (Some(x), Some(y)) => {
                (&x.tool, &x.arguments, &x.outcome) == (&y.tool, &y.arguments, &y.outcome)
            }
            _ => false,
        };
        if !same {
            let json = |c: &ToolCallRecord| {
                serde_json::to_string(c).unwrap_or_else(|_| call_json(&c.tool, &c.arguments))
            };
            return Some(Divergence {
                seq,
                difference: Difference::ToolCall { index: i as u32 },
                recorded: x.map(json),
                replayed: y.map(json),
            });
        }
    }
    if (recorded.payload_format, &recorded.payload) != (replayed.payload_format, &replayed.payload)
    {
        let payload = |r: &LedgerRecord| r.payload_json().unwrap_or_else(|_| r.payload.clone());
        return at(Difference::Payload, payload(recorded), payload(replayed));
    }
    let rest = |r: &LedgerRecord| {
        r.turn.clone().map(|mut t| {
            t.tool_calls.clear();
            t
        })
    };
    let (x, y) = (rest(recorded), rest(replayed));
    if x != y {
        let json =
            |t: Option<crate::record::TurnRecord>| serde_json::to_string(&t).unwrap_or_default();
        return at(Difference::Turn, json(x), json(y));
    }
    if recorded.receipt != replayed.receipt {
        let json = |r: &LedgerRecord| serde_json::to_string(&r.receipt).unwrap_or_default();
        return at(Difference::Receipt, json(recorded), json(replayed));
    }
    None
}

/// The ledger a replayed run commits to: each record is compared with the
/// recorded one at its place, and refused (which stops the run) when it
/// differs or when the recording has nothing there.
struct Comparison<'r> {
    recorded: &'r [LedgerRecord],
    /// The recording stops while its run was still going: past its end,
    /// the replay stops without a divergence.
    unfinished: bool,
    divergence: Arc<FirstDivergence>,
    /// The records the replay committed that matched, and whether it
    /// reached the end of an unfinished recording.
    state: Mutex<(Vec<LedgerRecord>, bool)>,
}

impl<'r> Comparison<'r> {
    fn new(recorded: &'r [LedgerRecord], divergence: Arc<FirstDivergence>) -> Self {
        // A receiver was working on the last transfer: the run goes on past it.
        let unfinished = recorded.last().is_some_and(|r| {
            matches!(r.to, Endpoint::Agent(_))
                && matches!(r.receipt, Receipt::Accepted | Receipt::Approved { .. })
        });
        Comparison {
            recorded,
            unfinished,
            divergence,
            state: Mutex::new((Vec::new(), false)),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, (Vec<LedgerRecord>, bool)> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn committed(&self) -> usize {
        self.state().0.len()
    }

    fn reached_end(&self) -> bool {
        self.state().1
    }
}

/// The refusal that stops a replay.
fn stop(why: &str) -> LedgerError {
    LedgerError::Storage(format!("replay: {why}"))
}

impl Ledger for Comparison<'_> {
    fn append(&self, record: &LedgerRecord) -> Result<(), LedgerError> {
        if !self.divergence.is_empty() {
            return Err(stop("diverged"));
        }
        let mut state = self.state();
        let Some(recorded) = self.recorded.get(record.seq as usize) else {
            if self.unfinished {
                state.1 = true;
                return Err(stop("the recording ends here"));
            }
            self.divergence.note(Divergence {
                seq: record.seq,
                difference: Difference::WentOn,
                recorded: None,
                replayed: Some(summary(record)),
            });
            return Err(stop("diverged"));
        };
        if let Some(divergence) = compare(recorded, record) {
            self.divergence.note(divergence);
            return Err(stop("diverged"));
        }
        state.0.push(record.clone());
        Ok(())
    }

    fn records(&self, run_id: u64) -> Result<Vec<LedgerRecord>, LedgerError> {
        let state = self.state();
        Ok(state
            .0
            .iter()
            .filter(|r| r.run_id == run_id)
            .cloned()
            .collect())
    }

    fn runs(&self) -> Result<Vec<u64>, LedgerError> {
        Ok(self
            .recorded
            .first()
            .map(|r| r.run_id)
            .into_iter()
            .collect())
    }

    fn head(&self, run_id: u64) -> Result<Option<(u32, String)>, LedgerError> {
        let state = self.state();
        Ok(state
            .0
            .last()
            .filter(|r| r.run_id == run_id)
            .map(|r| (r.seq, r.hash.clone())))
    }
}
