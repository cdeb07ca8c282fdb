//! Durable, hash-chained transfer records (guarantee 11).
//!
//! With a [`Ledger`] attached (`Executor::with_ledger`), the executor
//! commits every transfer once its receipt is decided, before the receiver's
//! body runs, and the `END` transfer before the run returns. Each record
//! carries the hash of the one before it, so [`verify`] finds any record that
//! was edited, removed, reordered or cut off.
//!
//! [`MemoryLedger`] keeps records in memory (tests); `SqliteLedger` (feature
//! `sqlite`) keeps them in an embedded SQLite file, nothing to install,
//! marked with its format version (`LEDGER_FORMAT`) and opened for reading
//! only with `SqliteLedger::open_read_only`, which never writes to it.

mod chain;
#[cfg(feature = "checkpoint")]
mod checkpoint;
mod divergence;
pub(crate) mod journal;
mod journal_entry;
mod lease;
mod memory;
#[cfg(feature = "sqlite")]
mod sqlite;

pub use crate::spec::{JournalProblem, JournalTampering, LedgerError, PayloadFormat};
pub use chain::*;
#[cfg(feature = "checkpoint")]
pub use checkpoint::*;
pub use divergence::*;
pub(crate) use journal::*;
pub use journal_entry::*;
pub use lease::{Lease, LeaseRow, decide_claim, decide_write, now_ms};
pub(crate) use lease::{LeaseGuard, default_holder, same_run};
pub use memory::*;
#[cfg(feature = "sqlite")]
pub use sqlite::*;

use crate::spec::{Endpoint, Receipt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::fmt;

/// A transfer as the ledger stores it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LedgerRecord {
    /// The workflow's name.
    pub workflow: String,
    /// The run.
    pub run_id: u64,
    /// Position in the run, from 0.
    pub seq: u32,
    /// Agent turns completed before this transfer.
    pub hop: u32,
    /// The sender.
    pub from: Endpoint,
    /// The receiver.
    pub to: Endpoint,
    /// The payload's Rust type.
    pub payload_type: String,
    /// How `payload` is encoded.
    pub payload_format: PayloadFormat,
    /// The payload's canonical bytes, hex-encoded.
    pub payload: String,
    /// The receiver's answer.
    pub receipt: Receipt,
    /// Microseconds since the run started.
    pub at_us: u64,
    /// The same transfer delivered again after an escalation or a failed
    /// turn (absent from records that are not: ledgers written before it
    /// existed read the same).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub redelivery: bool,
    /// The sender's turn that produced this transfer (its tool calls with
    /// arguments, results and outcomes, and the usage it charged), when it
    /// had any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<crate::spec::TurnRecord>,
    /// The OpenTelemetry trace the transfer was recorded in (32 hex digits)
    /// when the run is traced with OpenTelemetry (`workflow-otel`, its
    /// layer installed); empty otherwise.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub trace_id: String,
    /// The OpenTelemetry span the transfer was recorded in (16 hex digits):
    /// the span of its `handoff` event, `invoke_workflow` for a run driven
    /// by `Executor::run`; empty when `trace_id` is.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub span_id: String,
    /// The root invariants the run was pinned to, as JSON text: on the
    /// run's first record (`#0`, `START ->`) only, committed before any
    /// agent works, so the run's header is covered by the hash chain. Absent
    /// on every other record, for a root with nothing to record (`()`), and
    /// in ledgers written before it existed (which hash and verify as
    /// before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<String>,
    /// The executor's mode when the record was written: absent for
    /// [`Mode::Enforce`](crate::Mode::Enforce) (records written before audit
    /// mode existed read and hash the same), `audit` in every record of an
    /// audited run.
    #[serde(default, skip_serializing_if = "crate::spec::Mode::is_enforce")]
    pub mode: crate::spec::Mode,
    /// The scope the sender worked under when it sent this transfer (its
    /// own lease, renewals included): what the receipt checks the lease the
    /// transfer carries against, recorded so that a run resumed with the
    /// transfer waiting for its receipt checks the same. Absent for a
    /// transfer from `START` or from a turn under no scope, and in ledgers
    /// written before it existed (which hash and verify as before; their
    /// leases are checked against the run's bounds only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_scope: Option<crate::spec::SenderScope>,
    /// Where the record stands in a fan-out (parallel branches): the
    /// branch it belongs to and the record it follows, or the join and the
    /// branches' heads. Absent outside fan-outs (records written before
    /// parallel branches existed read and hash the same).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lineage: Option<crate::spec::Lineage>,
    /// The hash of the previous record of the run (64 zeros for the first).
    pub prev_hash: String,
    /// The SHA-256 of this record's content and `prev_hash`, hex-encoded.
    pub hash: String,
}

/// The hash of the record before the first one of a run.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

impl LedgerRecord {
    /// The hash of the record's content chained to `prev_hash`.
    pub fn compute_hash(&self) -> String {
        let mut h = Sha256::new();
        let mut field = |bytes: &[u8]| {
            h.update((bytes.len() as u64).to_le_bytes());
            h.update(bytes);
        };
        field(self.prev_hash.as_bytes());
        field(self.workflow.as_bytes());
        field(&self.run_id.to_le_bytes());
        field(&self.seq.to_le_bytes());
        field(&self.hop.to_le_bytes());
        field(self.from.to_string().as_bytes());
        field(self.to.to_string().as_bytes());
        field(self.payload_type.as_bytes());
        field(match self.payload_format {
            PayloadFormat::Msgpack => b"msgpack",
            PayloadFormat::Json => b"json",
        });
        field(self.payload.as_bytes());
        // A receipt always serializes; its JSON is canonical (fixed order).
        field(
            serde_json::to_string(&self.receipt)
                .unwrap_or_default()
                .as_bytes(),
        );
        field(&self.at_us.to_le_bytes());
        // Absent for most records: hashed as nothing, so records without a
        // turn hash as they always did.
        if self.redelivery {
            field(b"redelivery");
        }
        if let Some(turn) = &self.turn {
            field(serde_json::to_string(turn).unwrap_or_default().as_bytes());
        }
        // The trace link came later: a record without one hashes as before.
        if !self.trace_id.is_empty() || !self.span_id.is_empty() {
            field(self.trace_id.as_bytes());
            field(self.span_id.as_bytes());
        }
        // The pinned root came later too: hashed only when recorded, tagged
        // so that it can never read as a trace link.
        if let Some(root) = &self.root {
            field(b"root");
            field(root.as_bytes());
        }
        // Hashed only when not the default: enforced records hash as before.
        if self.mode == crate::spec::Mode::Audit {
            field(b"mode=audit");
        }
        // The sender's scope came later still: hashed only when recorded,
        // tagged like the root.
        if let Some(scope) = &self.sender_scope {
            field(b"sender_scope");
            field(scope.authority.as_bytes());
            field(
                serde_json::to_string(&scope.expires)
                    .unwrap_or_default()
                    .as_bytes(),
            );
        }
        // Parallel branches came later: hashed only when present, tagged.
        if let Some(lineage) = &self.lineage {
            field(b"lineage");
            field(
                serde_json::to_string(lineage)
                    .unwrap_or_default()
                    .as_bytes(),
            );
        }
        hex::encode(h.finalize())
    }

    /// The record a ledger stored as JSON text under run `run_id` and
    /// sequence number `seq`, read strictly (a key given twice or a value
    /// nested past [`MAX_PAYLOAD_DEPTH`](crate::MAX_PAYLOAD_DEPTH) is
    /// refused) and checked against that key, which the hash does not
    /// cover: a record filed under another run's or another sequence
    /// number's key would read as a whole chain and then break every
    /// resume. Every storage reads its records through it.
    pub fn from_stored(run_id: u64, seq: u32, json: &str) -> Result<LedgerRecord, LedgerError> {
        let corrupt = |why: String| LedgerError::CorruptRecord { run_id, seq, why };
        let record: LedgerRecord = crate::encode::from_json_text(json)
            .map_err(|e| corrupt(format!("it is not a record: {e}")))?;
        if record.run_id != run_id {
            return Err(corrupt(format!(
                "it is stored in run {run_id} but carries run {}",
                record.run_id
            )));
        }
        if record.seq != seq {
            return Err(corrupt(format!(
                "it is stored as #{seq} but carries #{}",
                record.seq
            )));
        }
        Ok(record)
    }

    /// The payload's canonical bytes.
    pub fn payload_bytes(&self) -> Result<Vec<u8>, LedgerError> {
        hex::decode(&self.payload)
            .map_err(|e| LedgerError::Corrupt(format!("payload of #{}: {e}", self.seq)))
    }

    /// The payload as JSON text: the same text `serde_json` wrote for the
    /// value handed over.
    pub fn payload_json(&self) -> Result<String, LedgerError> {
        crate::encode::to_json(self.payload_format, &self.payload_bytes()?)
            .map_err(|e| LedgerError::Corrupt(format!("payload of #{}: {e}", self.seq)))
    }
}

/// Where records are committed.
pub trait Ledger: Send + Sync {
    /// Stores `record` durably; when this returns `Ok`, the record survives
    /// the process. A second record with the same run and sequence number is
    /// refused.
    fn append(&self, record: &LedgerRecord) -> Result<(), LedgerError>;

    /// The records of `run_id`, in sequence order.
    fn records(&self, run_id: u64) -> Result<Vec<LedgerRecord>, LedgerError>;

    /// The ids of the stored runs, in increasing order: every run with a
    /// record or a head (a run whose records were all removed is listed).
    fn runs(&self) -> Result<Vec<u64>, LedgerError>;

    /// The last sequence number and hash appended for `run_id`, kept apart
    /// from the records so that records cut off the end are found.
    fn head(&self, run_id: u64) -> Result<Option<(u32, String)>, LedgerError>;

    /// Journals the outcome of a tool call before the agent that made it
    /// sees it: call `entry.call.index` of the turn whose outcome takes
    /// sequence number `turn_seq` in run `run_id`, bound to that place
    /// ([`JournalEntry::bind`]). When a run is resumed, the turn cut by the
    /// crash is served these outcomes (checked first:
    /// [`check_turn_journal`]) instead of calling the tools again; a later
    /// call at the same place replaces the entry.
    ///
    /// The default keeps nothing: with a ledger that does not override it,
    /// a resumed turn calls its tools again (at least once).
    fn append_tool_call(
        &self,
        run_id: u64,
        turn_seq: u32,
        entry: &JournalEntry,
    ) -> Result<(), LedgerError> {
        let _ = (run_id, turn_seq, entry);
        Ok(())
    }

    /// The tool calls journaled for the turn at `turn_seq` of run `run_id`
    /// ([`append_tool_call`](Self::append_tool_call)), in index order, as
    /// stored (unchecked).
    fn tool_calls(&self, run_id: u64, turn_seq: u32) -> Result<Vec<JournalEntry>, LedgerError> {
        let _ = (run_id, turn_seq);
        Ok(Vec::new())
    }

    /// Claims run `run_id` for `holder` for `ttl` (see [`Lease`]):
    /// atomically, refused with [`LedgerError::Claimed`] (naming the holder
    /// and when its lease expires) while another lease on the run is live;
    /// otherwise the run is taken with the next fencing token, and every
    /// write made under an older token is refused from then on
    /// ([`decide_claim`] is the rule).
    ///
    /// The default keeps no leases: every claim is granted with token 0 and
    /// nothing is fenced, so two resumers of one run may both work on it
    /// (one then fails to commit, as a duplicate record).
    fn claim(
        &self,
        run_id: u64,
        holder: &str,
        ttl: std::time::Duration,
    ) -> Result<Lease, LedgerError> {
        let _ = ttl;
        Ok(Lease::unfenced(run_id, holder))
    }

    /// [`append`](Self::append) under `lease`, in the same transaction as
    /// the check: refused with [`LedgerError::Fenced`] when a newer claim of
    /// the run exists; renews the lease (the heartbeat of a run at work);
    /// the first record of a fresh run stores its lease ([`decide_write`]
    /// is the rule).
    ///
    /// The default appends without a check (for ledgers that keep no
    /// leases).
    fn append_leased(&self, record: &LedgerRecord, lease: &Lease) -> Result<(), LedgerError> {
        let _ = lease;
        self.append(record)
    }

    /// [`append_tool_call`](Self::append_tool_call) under `lease`, fenced
    /// and renewing like [`append_leased`](Self::append_leased): a holder
    /// that lost its lease cannot journal a tool call either.
    ///
    /// The default journals without a check.
    fn append_tool_call_leased(
        &self,
        run_id: u64,
        turn_seq: u32,
        call: &JournalEntry,
        lease: &Lease,
    ) -> Result<(), LedgerError> {
        let _ = lease;
        self.append_tool_call(run_id, turn_seq, call)
    }

    /// Renews `lease` for another term without writing anything else (a
    /// worker's timer heartbeat during a long turn): refused with
    /// [`LedgerError::Fenced`] once the run was taken over.
    ///
    /// The default renews nothing.
    fn renew(&self, lease: &Lease) -> Result<(), LedgerError> {
        let _ = lease;
        Ok(())
    }

    /// Releases `lease` when its holder is done with the run (the run ended,
    /// was suspended or failed): the run can be claimed at once, with the
    /// next token. A lease that was taken over is left alone.
    ///
    /// The default does nothing.
    fn release(&self, lease: &Lease) -> Result<(), LedgerError> {
        let _ = lease;
        Ok(())
    }

    /// Keeps an operator's revocation of a lease (`Executor::revoke`)
    /// durably, beside the run's records: a run resumed from this ledger,
    /// by any process, applies it again, and so does a replay
    /// (`Executor::replay_run`). Revoking one lease twice keeps both.
    ///
    /// The default keeps nothing and says so (an error): a revocation is
    /// never dropped silently.
    fn append_revocation(
        &self,
        revocation: &crate::spec::StoredRevocation,
    ) -> Result<(), LedgerError> {
        Err(LedgerError::Storage(format!(
            "this ledger keeps no revocations: the revocation of lease #{} of run {} holds only in this process",
            revocation.lease.seq, revocation.lease.run_id
        )))
    }

    /// The revocations kept for `run_id`
    /// ([`append_revocation`](Self::append_revocation)), in the order they
    /// were kept. The default: none kept.
    fn revocations(&self, run_id: u64) -> Result<Vec<crate::spec::StoredRevocation>, LedgerError> {
        let _ = run_id;
        Ok(Vec::new())
    }

    /// The lease row of `run_id`: who holds (or last held) it, its newest
    /// token, when it expires. The default: none kept.
    fn lease(&self, run_id: u64) -> Result<Option<LeaseRow>, LedgerError> {
        let _ = run_id;
        Ok(None)
    }

    /// Verifies the stored records of `run_id` against their chain and
    /// head, then its tool-call journal against the records
    /// ([`verify_journal`]): `Ok(())`, or why not ([`VerifyError::Tampered`]
    /// with what was found, a record that does not read included;
    /// [`VerifyError::Unreadable`] when the storage failed).
    fn verify_run(&self, run_id: u64) -> Result<(), VerifyError> {
        let head = self.head(run_id)?;
        let records = self.records(run_id)?;
        verify(
            run_id,
            &records,
            head.as_ref().map(|(s, h)| (*s, h.as_str())),
        )?;
        verify_journal(run_id, &records, |turn| self.tool_calls(run_id, turn))?
            .map_err(|t| VerifyError::Tampered(Tampering::Journal(t)))
    }
}

impl fmt::Display for LedgerRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "run {} #{} hop {} {} -> {} {:?} {}",
            self.run_id, self.seq, self.hop, self.from, self.to, self.receipt, self.payload_type
        )
    }
}
