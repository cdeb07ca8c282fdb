//! The ledger a replayed run commits to: each record compared with the one
//! recorded at its place.

use std::sync::{Arc, Mutex};

use crate::ledger::{Ledger, LedgerRecord};
use crate::spec::LedgerError;
use crate::spec::{Endpoint, Receipt};
use crate::spec::{ToolCallRecord, ToolOutcome};

use crate::ledger::call_json;
use crate::ledger::{Difference, Divergence, FirstDivergence};

/// A record as JSON text, for a report: route, payload and receipt.
pub(super) fn summary(r: &LedgerRecord) -> String {
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
    // The run's header first: a run recorded with its root is replayed
    // under the same root, or the replay reports it (a recording made
    // before roots were recorded has none to compare).
    if let Some(pinned) = &recorded.root {
        let held = replayed.root.as_deref().unwrap_or("null");
        if !crate::spec::same_root(pinned, held) {
            return at(Difference::Root, pinned.clone(), held.to_owned());
        }
    }
    let route = |r: &LedgerRecord| {
        serde_json::json!({ "from": r.from.to_string(), "to": r.to.to_string() }).to_string()
    };
    if (&recorded.from, &recorded.to) != (&replayed.from, &replayed.to) {
        return at(Difference::Route, route(recorded), route(replayed));
    }
    // Compared per branch: the transfer at this place must belong to the
    // same fan-out and branch, after the same parent (the commit order of
    // a fan-out does not depend on which branch finished first).
    if recorded.lineage != replayed.lineage {
        let lineage = |r: &LedgerRecord| serde_json::to_string(&r.lineage).unwrap_or_default();
        return at(Difference::Lineage, lineage(recorded), lineage(replayed));
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
            // A call audit mode let through, refused when enforced.
            let enforced = match (x, y.map(|y| &y.outcome)) {
                (Some(x), Some(ToolOutcome::Failed { error })) if x.audit.is_some() => {
                    Some(Difference::Enforced {
                        reason: error.to_string(),
                    })
                }
                _ => None,
            };
            return Some(Divergence {
                seq,
                difference: enforced.unwrap_or(Difference::ToolCall { index: i as u32 }),
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
    // The rest of the turn: usage, open questions, the model calls (their
    // requests, replies and outcomes; not how long they took).
    let rest = |r: &LedgerRecord| {
        r.turn.clone().map(|mut t| {
            t.tool_calls.clear();
            for call in &mut t.model_calls {
                call.duration_us = 0;
            }
            t
        })
    };
    let (x, y) = (rest(recorded), rest(replayed));
    if x != y {
        let json =
            |t: Option<crate::spec::TurnRecord>| serde_json::to_string(&t).unwrap_or_default();
        return at(Difference::Turn, json(x), json(y));
    }
    if recorded.receipt != replayed.receipt {
        let json = |r: &LedgerRecord| serde_json::to_string(&r.receipt).unwrap_or_default();
        // A transfer audit mode let through, stopped when enforced.
        let stopped_for = match &replayed.receipt {
            Receipt::Rejected { reason } => Some(reason.to_string()),
            Receipt::Escalated { reason } => Some(reason.to_string()),
            _ => None,
        };
        if let (Receipt::Audited { .. }, Some(reason)) = (&recorded.receipt, stopped_for) {
            return at(
                Difference::Enforced { reason },
                json(recorded),
                json(replayed),
            );
        }
        return at(Difference::Receipt, json(recorded), json(replayed));
    }
    None
}

/// The ledger a replayed run commits to: each record is compared with the
/// recorded one at its place, and refused (which stops the run) when it
/// differs or when the recording has nothing there.
pub(super) struct Comparison<'r> {
    recorded: &'r [LedgerRecord],
    /// The recording stops while its run was still going: past its end,
    /// the replay stops without a divergence.
    pub(super) unfinished: bool,
    divergence: Arc<FirstDivergence>,
    /// The records the replay committed that matched, and whether it
    /// reached the end of an unfinished recording.
    state: Mutex<(Vec<LedgerRecord>, bool)>,
}

impl<'r> Comparison<'r> {
    pub(super) fn new(recorded: &'r [LedgerRecord], divergence: Arc<FirstDivergence>) -> Self {
        // A receiver was working on the last transfer: the run goes on past it.
        let unfinished = recorded.last().is_some_and(|r| {
            matches!(r.to, Endpoint::Agent(_))
                && matches!(
                    r.receipt,
                    Receipt::Accepted | Receipt::Approved { .. } | Receipt::Audited { .. }
                )
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

    pub(super) fn committed(&self) -> usize {
        self.state().0.len()
    }

    pub(super) fn reached_end(&self) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{PayloadFormat, ToolError, ToolErrorKind, TurnRecord};

    /// A record from `worker` to `END` whose turn made one call of `dig`.
    fn record(receipt: Receipt, call: ToolCallRecord) -> LedgerRecord {
        LedgerRecord {
            workflow: "crew".into(),
            run_id: 1,
            seq: 2,
            hop: 2,
            from: Endpoint::Agent("worker".into()),
            to: Endpoint::End,
            payload_type: "u32".into(),
            payload_format: PayloadFormat::Json,
            payload: hex::encode("3"),
            receipt,
            at_us: 0,
            redelivery: false,
            turn: Some(TurnRecord {
                agent: "worker".into(),
                input_seq: 1,
                tool_calls: vec![call],
                model_calls: Vec::new(),
                usage: crate::spec::Usage::default(),
                unresolved: Vec::new(),
                leases: Vec::new(),
            }),
            trace_id: String::new(),
            span_id: String::new(),
            mode: crate::spec::Mode::Audit,
            root: None,
            sender_scope: None,
            lineage: None,
            prev_hash: String::new(),
            hash: String::new(),
        }
    }

    fn call(outcome: ToolOutcome, audit: Option<&str>) -> ToolCallRecord {
        ToolCallRecord {
            tool: "dig".into(),
            index: 0,
            arguments: "3".into(),
            outcome,
            attempts: 1,
            duration_us: 0,
            audit: audit.map(str::to_owned),
        }
    }

    #[test]
    fn a_call_audit_mode_let_through_and_enforcement_refuses_is_named_as_enforced() {
        let ok = ToolOutcome::Ok {
            result: "3".into(),
            digest: String::new(),
        };
        let refused = ToolError::of("dig", ToolErrorKind::OutOfScope, "the scope expired");
        let recorded = record(
            Receipt::Accepted,
            call(ok.clone(), Some("the scope expired")),
        );
        let replayed = record(
            Receipt::Accepted,
            call(
                ToolOutcome::Failed {
                    error: refused.clone(),
                },
                None,
            ),
        );
        let d = compare(&recorded, &replayed).expect("differs");
        assert_eq!(
            d.difference,
            Difference::Enforced {
                reason: refused.to_string()
            }
        );
        // The same difference on a call that was not audited is a plain
        // tool-call divergence.
        let recorded = record(Receipt::Accepted, call(ok, None));
        let d = compare(&recorded, &replayed).expect("differs");
        assert_eq!(d.difference, Difference::ToolCall { index: 0 });
    }
}
