//! Records in memory (tests, and runs that need no durability).

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::ledger::{JournalEntry, Ledger, LedgerRecord};
use crate::spec::LedgerError;
/// Records kept in memory, for tests.
#[derive(Debug, Default)]
pub struct MemoryLedger {
    runs: Mutex<BTreeMap<u64, Vec<LedgerRecord>>>,
    heads: Mutex<BTreeMap<u64, (u32, String)>>,
    /// Journaled tool calls by run, turn and index.
    calls: Mutex<BTreeMap<(u64, u32, u32), JournalEntry>>,
}

impl MemoryLedger {
    /// An empty ledger.
    pub fn new() -> Self {
        MemoryLedger::default()
    }

    /// Replaces the stored records of `run_id` (to test [`verify`](crate::ledger::verify) on
    /// tampered records).
    pub fn replace(&self, run_id: u64, records: Vec<LedgerRecord>) {
        if let Ok(mut runs) = self.runs.lock() {
            runs.insert(run_id, records);
        }
    }
}

fn poisoned<T>(_: T) -> LedgerError {
    LedgerError::Storage("the in-memory ledger's lock was poisoned".into())
}

impl Ledger for MemoryLedger {
    fn append(&self, record: &LedgerRecord) -> Result<(), LedgerError> {
        let mut runs = self.runs.lock().map_err(poisoned)?;
        let run = runs.entry(record.run_id).or_default();
        if run.iter().any(|r| r.seq == record.seq) {
            return Err(LedgerError::Duplicate {
                run_id: record.run_id,
                seq: record.seq,
            });
        }
        run.push(record.clone());
        self.heads
            .lock()
            .map_err(poisoned)?
            .insert(record.run_id, (record.seq, record.hash.clone()));
        Ok(())
    }

    fn records(&self, run_id: u64) -> Result<Vec<LedgerRecord>, LedgerError> {
        let runs = self.runs.lock().map_err(poisoned)?;
        let mut records = runs.get(&run_id).cloned().unwrap_or_default();
        records.sort_by_key(|r| r.seq);
        Ok(records)
    }

    fn runs(&self) -> Result<Vec<u64>, LedgerError> {
        let mut runs: std::collections::BTreeSet<u64> = self
            .runs
            .lock()
            .map_err(poisoned)?
            .keys()
            .copied()
            .collect();
        runs.extend(self.heads.lock().map_err(poisoned)?.keys());
        Ok(runs.into_iter().collect())
    }

    fn head(&self, run_id: u64) -> Result<Option<(u32, String)>, LedgerError> {
        Ok(self.heads.lock().map_err(poisoned)?.get(&run_id).cloned())
    }

    fn append_tool_call(
        &self,
        run_id: u64,
        turn_seq: u32,
        entry: &JournalEntry,
    ) -> Result<(), LedgerError> {
        self.calls
            .lock()
            .map_err(poisoned)?
            .insert((run_id, turn_seq, entry.call.index), entry.clone());
        Ok(())
    }

    fn tool_calls(&self, run_id: u64, turn_seq: u32) -> Result<Vec<JournalEntry>, LedgerError> {
        Ok(self
            .calls
            .lock()
            .map_err(poisoned)?
            .range((run_id, turn_seq, 0)..=(run_id, turn_seq, u32::MAX))
            .map(|(_, call)| call.clone())
            .collect())
    }
}
