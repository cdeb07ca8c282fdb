//! Records in memory (tests, and runs that need no durability).

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::ledger::{
    JournalEntry, Lease, LeaseRow, Ledger, LedgerRecord, decide_claim, decide_write, now_ms,
};
use crate::spec::LedgerError;

/// Records kept in memory, for tests.
#[derive(Debug, Default)]
pub struct MemoryLedger {
    runs: Mutex<BTreeMap<u64, Vec<LedgerRecord>>>,
    heads: Mutex<BTreeMap<u64, (u32, String)>>,
    /// Journaled tool calls by run, turn and index.
    calls: Mutex<BTreeMap<(u64, u32, u32), JournalEntry>>,
    /// The lease of each run; its lock is taken first and held across a
    /// leased write, which makes the check and the write one step.
    leases: Mutex<BTreeMap<u64, LeaseRow>>,
    /// Operators' revocations, by run, in the order they were kept.
    revocations: Mutex<BTreeMap<u64, Vec<crate::spec::StoredRevocation>>>,
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

impl MemoryLedger {
    /// Runs `write` if `lease` still holds its run, renewing it: the check
    /// and the write under the leases' lock.
    fn leased<T>(
        &self,
        run_id: u64,
        lease: &Lease,
        write: impl FnOnce() -> Result<T, LedgerError>,
    ) -> Result<T, LedgerError> {
        crate::ledger::same_run(lease, run_id)?;
        let mut leases = self.leases.lock().map_err(poisoned)?;
        let row = decide_write(lease, leases.get(&run_id), now_ms())?;
        let done = write()?;
        if let Some(row) = row {
            leases.insert(run_id, row);
        }
        Ok(done)
    }
}

impl Ledger for MemoryLedger {
    fn claim(
        &self,
        run_id: u64,
        holder: &str,
        ttl: std::time::Duration,
    ) -> Result<Lease, LedgerError> {
        let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
        let mut leases = self.leases.lock().map_err(poisoned)?;
        let lease = decide_claim(run_id, leases.get(&run_id), holder, ttl_ms, now_ms())?;
        leases.insert(
            run_id,
            LeaseRow {
                holder: lease.holder.clone(),
                token: lease.token,
                expires_at_ms: lease.expires_at_ms,
            },
        );
        Ok(lease)
    }

    fn append_leased(&self, record: &LedgerRecord, lease: &Lease) -> Result<(), LedgerError> {
        self.leased(record.run_id, lease, || self.append(record))
    }

    fn append_tool_call_leased(
        &self,
        run_id: u64,
        turn_seq: u32,
        call: &JournalEntry,
        lease: &Lease,
    ) -> Result<(), LedgerError> {
        self.leased(run_id, lease, || {
            self.append_tool_call(run_id, turn_seq, call)
        })
    }

    fn renew(&self, lease: &Lease) -> Result<(), LedgerError> {
        let mut leases = self.leases.lock().map_err(poisoned)?;
        // Whatever half of the term is left: a renewal always renews.
        decide_write(lease, leases.get(&lease.run_id), now_ms())?;
        leases.insert(
            lease.run_id,
            LeaseRow {
                holder: lease.holder.clone(),
                token: lease.token,
                expires_at_ms: now_ms().saturating_add(lease.ttl_ms),
            },
        );
        Ok(())
    }

    fn release(&self, lease: &Lease) -> Result<(), LedgerError> {
        let mut leases = self.leases.lock().map_err(poisoned)?;
        if let Some(row) = leases.get_mut(&lease.run_id)
            && row.token == lease.token
        {
            row.expires_at_ms = 0;
        }
        Ok(())
    }

    fn lease(&self, run_id: u64) -> Result<Option<LeaseRow>, LedgerError> {
        Ok(self.leases.lock().map_err(poisoned)?.get(&run_id).cloned())
    }

    fn append_revocation(
        &self,
        revocation: &crate::spec::StoredRevocation,
    ) -> Result<(), LedgerError> {
        self.revocations
            .lock()
            .map_err(poisoned)?
            .entry(revocation.lease.run_id)
            .or_default()
            .push(revocation.clone());
        Ok(())
    }

    fn revocations(&self, run_id: u64) -> Result<Vec<crate::spec::StoredRevocation>, LedgerError> {
        Ok(self
            .revocations
            .lock()
            .map_err(poisoned)?
            .get(&run_id)
            .cloned()
            .unwrap_or_default())
    }

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
