//! The tool-call journal's entries and their checks: each entry is bound by
//! a hash to its run, its turn, its index and the record its turn worked
//! on; its result is checked against its digest; once the turn's record is
//! committed, the entry is checked against the call that record holds.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::ledger::LedgerRecord;
use crate::spec::{JournalProblem, JournalTampering, LedgerError, ToolCallRecord, ToolOutcome};

/// A journaled tool call: the call as recorded and the hash that binds it
/// to its place (see [`JournalEntry::bind`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JournalEntry {
    /// The call.
    pub call: ToolCallRecord,
    /// The SHA-256 of the call, its run, its turn and the hash of the
    /// record its turn worked on, hex-encoded. Empty for an entry written
    /// before entries were bound (its digest and its turn's record are
    /// still checked).
    #[serde(default)]
    pub hash: String,
}

impl JournalEntry {
    /// An entry as a ledger stored it (JSON text): an entry with its hash,
    /// or (written before entries were bound) the bare call, read as an
    /// entry without a hash. Read strictly: a key given twice or a value
    /// nested past the depth limit is refused.
    pub fn from_stored(json: &str) -> Result<JournalEntry, crate::spec::PayloadError> {
        let value = crate::encode::parse_json(json)?;
        serde_json::from_value::<JournalEntry>(value.clone()).or_else(|bound| {
            serde_json::from_value::<ToolCallRecord>(value)
                .map(|call| JournalEntry {
                    call,
                    hash: String::new(),
                })
                // The bound form's error: what a ledger written today holds.
                .map_err(|_| crate::spec::PayloadError::Invalid(bound.to_string()))
        })
    }

    /// The entry for call `call` of the turn at `turn_seq` of run `run_id`,
    /// where `anchor` is the hash of the record the turn works on (the
    /// record at `turn_seq - 1`).
    pub fn bind(run_id: u64, turn_seq: u32, anchor: &str, call: ToolCallRecord) -> Self {
        let hash = binding(run_id, turn_seq, anchor, &call);
        JournalEntry { call, hash }
    }

    /// Checks the entry found at position `position` of the turn at
    /// `turn_seq` of run `run_id`, whose input record has hash `anchor`:
    /// its index, its result's digest and its hash (when it has one).
    pub fn check(
        &self,
        run_id: u64,
        turn_seq: u32,
        anchor: &str,
        position: u32,
    ) -> Result<(), JournalTampering> {
        let tampered = |problem| JournalTampering {
            run_id,
            turn_seq,
            index: position,
            problem,
        };
        if self.call.index != position {
            return Err(tampered(JournalProblem::OutOfPlace {
                found: self.call.index,
            }));
        }
        check_digest(&self.call).map_err(tampered)?;
        if !self.hash.is_empty() && self.hash != binding(run_id, turn_seq, anchor, &self.call) {
            return Err(tampered(JournalProblem::Unbound));
        }
        Ok(())
    }
}

/// The hash binding `call` to its run, its turn and the record its turn
/// worked on (fields length-prefixed, like a record's hash).
fn binding(run_id: u64, turn_seq: u32, anchor: &str, call: &ToolCallRecord) -> String {
    let mut h = Sha256::new();
    let mut field = |bytes: &[u8]| {
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    field(b"workflow tool call");
    field(&run_id.to_le_bytes());
    field(&turn_seq.to_le_bytes());
    field(anchor.as_bytes());
    // A call always serializes; its JSON is canonical (fixed field order).
    field(serde_json::to_string(call).unwrap_or_default().as_bytes());
    hex::encode(h.finalize())
}

/// A usable result must be the one its digest was taken of.
fn check_digest(call: &ToolCallRecord) -> Result<(), JournalProblem> {
    match &call.outcome {
        ToolOutcome::Ok { result, digest } if crate::encode::digest(result) != *digest => {
            Err(JournalProblem::Digest)
        }
        _ => Ok(()),
    }
}

/// Checks the journal of the turn at `turn_seq` of run `run_id` before its
/// outcomes are served: `anchor` is the hash of the record the turn works
/// on. Entries must be calls 0, 1, 2, ... in order, each bound to this
/// place, each result matching its digest.
pub fn check_turn_journal(
    run_id: u64,
    turn_seq: u32,
    anchor: &str,
    entries: &[JournalEntry],
) -> Result<(), JournalTampering> {
    entries
        .iter()
        .zip(0u32..)
        .try_for_each(|(entry, position)| entry.check(run_id, turn_seq, anchor, position))
}

/// Checks the journal of run `run_id` against its `records` (verified
/// already): the journal of every turn that worked on one of them
/// ([`check_turn_journal`]); for a turn whose record is committed, every
/// entry must be the call that record holds at its index; and every tool
/// call a record holds must match its digest. `journal` gives the entries
/// of a turn.
pub fn verify_journal(
    run_id: u64,
    records: &[LedgerRecord],
    mut journal: impl FnMut(u32) -> Result<Vec<JournalEntry>, LedgerError>,
) -> Result<Result<(), JournalTampering>, LedgerError> {
    let cut = cut_branches(records);
    for (record, turn_seq) in records.iter().zip(1u32..) {
        let entries = journal(turn_seq)?;
        // The record the turn worked on: the one before its outcome, or a
        // branch's start for a branch of a fan-out (its outcome's parent).
        let worked_on = match records
            .get(turn_seq as usize)
            .and_then(|r| r.lineage.as_ref())
        {
            Some(
                crate::spec::Lineage::Step { parent, .. }
                | crate::spec::Lineage::Outcome { parent, .. },
            ) => records.get(*parent as usize).unwrap_or(record),
            // A fan-out's first start: the turn that fanned out worked on
            // the fan-out's record (for a fan-out inside a branch, not the
            // record before).
            Some(crate::spec::Lineage::Start { fork, branch: 0 }) => {
                records.get(*fork as usize).unwrap_or(record)
            }
            _ => record,
        };
        let checked = check_turn_journal(run_id, turn_seq, &worked_on.hash, &entries);
        // The first outcome of a fan-out cut before it was recorded: its
        // turn may be any branch still running when the run was cut.
        let checked = match checked {
            Err(_) if turn_seq as usize == records.len() && !cut.is_empty() => cut
                .iter()
                .map(|start| check_turn_journal(run_id, turn_seq, &start.hash, &entries))
                .find(Result::is_ok)
                .unwrap_or(checked),
            checked => checked,
        };
        if let Err(t) = checked {
            return Ok(Err(t));
        }
        let Some(outcome) = records.get(turn_seq as usize) else {
            continue;
        };
        let recorded = outcome.turn.as_ref().map(|t| t.tool_calls.as_slice());
        for entry in &entries {
            if recorded.and_then(|calls| calls.get(entry.call.index as usize)) != Some(&entry.call)
            {
                return Ok(Err(JournalTampering {
                    run_id,
                    turn_seq,
                    index: entry.call.index,
                    problem: JournalProblem::NotAsRecorded,
                }));
            }
        }
    }
    for record in records {
        let calls = record.turn.iter().flat_map(|t| t.tool_calls.iter());
        for call in calls {
            if let Err(problem) = check_digest(call) {
                return Ok(Err(JournalTampering {
                    run_id,
                    turn_seq: record.seq,
                    index: call.index,
                    problem,
                }));
            }
        }
    }
    Ok(Ok(()))
}

/// The records the cut turns of the fan-out the records were cut inside
/// worked on (their last record is inside a fan-out): each branch's start
/// or step, or a join inside a branch, accepted, that no later record
/// follows (neither what its turn handed on nor a fan-out it opened).
fn cut_branches(records: &[LedgerRecord]) -> Vec<&LedgerRecord> {
    use crate::spec::Lineage;
    let of = |seq: u32| records.get(seq as usize).and_then(|r| r.lineage.as_ref());
    let inside = records
        .last()
        .and_then(|r| r.lineage.as_ref())
        .is_some_and(|l| l.inside(&of));
    if !inside {
        return Vec::new();
    }
    let followed: Vec<u32> = records
        .iter()
        .filter_map(|r| match &r.lineage {
            Some(Lineage::Step { parent, .. } | Lineage::Outcome { parent, .. }) => Some(*parent),
            Some(Lineage::Start { fork, branch: 0 }) => Some(*fork),
            _ => None,
        })
        .collect();
    records
        .iter()
        .filter(|r| {
            r.lineage.as_ref().is_some_and(|l| match l {
                Lineage::Start { .. } | Lineage::Step { .. } => true,
                Lineage::Join { .. } => l.inside(&of),
                Lineage::Outcome { .. } => false,
            }) && !matches!(r.receipt, crate::spec::Receipt::Rejected { .. })
                && !followed.contains(&r.seq)
        })
        .collect()
}
