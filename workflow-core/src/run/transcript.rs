//! The run's witness while it runs: every transfer, compact, its payload
//! bytes in one buffer (`Transcript`).

use std::borrow::Cow;
use std::fmt;

use crate::spec::{Escalation, Receipt, RecordError, RejectReason, TransferRecord, TurnRecord};
/// A record as kept during a run: compact, payload bytes in a shared buffer.
///
/// With the transfer, who made it and under what lease: the input of the
/// agent turn that sent it and the lease its sender worked under, which
/// a turn's context reads its agent's earlier turns and the lease checks
/// read lease chains from (`run/earlier.rs`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry {
    pub(crate) hop: u32,
    pub(crate) edge: u16,
    pub(crate) status: Status,
    /// The same transfer again, after an escalation (not a new handoff).
    pub(crate) redelivery: bool,
    pub(crate) format: crate::spec::PayloadFormat,
    pub(crate) start: u32,
    pub(crate) end: u32,
    /// For a new transfer, the input of the agent turn that made it, by
    /// sequence number, which is also the lease its sender worked under;
    /// for a redelivery (no turn of its own), the lease the transfer it
    /// repeats was sent under ([`NONE`](crate::run::earlier::NONE): no
    /// agent turn, no lease). Read with [`Entry::turn_input`] and
    /// [`Entry::under`]: one field keeps an entry in 32 bytes.
    pub(crate) link: u32,
    pub(crate) at_us: u64,
}

impl Entry {
    /// The input of the agent turn that made the transfer (`None`: no
    /// agent turn made it, as for the run's input and a redelivery).
    #[inline]
    pub(crate) fn turn_input(&self) -> Option<u32> {
        (!self.redelivery && self.link != crate::run::earlier::NONE).then_some(self.link)
    }

    /// The lease its sender worked under: the sender's input (for a
    /// redelivery, the original transfer's); what a lease granted by this
    /// transfer derives from (`None`: none).
    #[inline]
    pub(crate) fn under(&self) -> Option<u32> {
        (self.link != crate::run::earlier::NONE).then_some(self.link)
    }
}

/// A receipt without its details: the reasons and decisions of the few
/// receipts that have them are kept beside the entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    Pending,
    Accepted,
    Rejected,
    Escalated,
    Approved,
    /// Audit mode: checks failed, the receiver's body ran anyway.
    Audited,
    TurnFailed,
}

impl Status {
    /// The receiver's body ran (or runs) on this transfer.
    pub(crate) fn ran(self) -> bool {
        matches!(self, Status::Accepted | Status::Approved | Status::Audited)
    }

    /// The receipt's status as its records spell it (`rejected`).
    pub(crate) fn word(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Accepted => "accepted",
            Status::Rejected => "rejected",
            Status::Escalated => "escalated",
            Status::Approved => "approved",
            Status::Audited => "audited",
            Status::TurnFailed => "turn_failed",
        }
    }
}

/// The scope the sender of transfer `at` worked under, in 32 bytes (with
/// an `Expiry`, 40): its authority and its expiry packed
/// (`earlier::pack_expiry`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ScopeAt {
    authority: &'static str,
    value: u64,
    at: u32,
    kind: u8,
}

/// A run's first room for its senders' scopes.
#[cold]
#[inline(never)]
fn reserve_first(scopes: &mut Vec<ScopeAt>) {
    scopes.reserve_exact(16);
}

/// The scope among `scopes` (in entry order) that the sender of the `i`th
/// transfer worked under ([`Transcript::sender_scope`]).
#[inline(always)]
pub(crate) fn scope_at(
    scopes: &[ScopeAt],
    i: usize,
) -> Option<(&'static str, crate::spec::Expiry)> {
    // The transfer asked about is nearly always the last one: looked up
    // without a call, the rest from the end.
    let last = scopes.last()?;
    match (last.at as usize).cmp(&i) {
        std::cmp::Ordering::Equal => Some((
            last.authority,
            super::earlier::unpack_expiry(last.kind, last.value)?,
        )),
        std::cmp::Ordering::Less => None,
        std::cmp::Ordering::Greater => scope_before_last(scopes, i),
    }
}

/// [`scope_at`] of a transfer before the last scope's.
#[inline(never)]
fn scope_before_last(scopes: &[ScopeAt], i: usize) -> Option<(&'static str, crate::spec::Expiry)> {
    scopes
        .iter()
        .rev()
        .take_while(|s| s.at as usize >= i)
        .find(|s| s.at as usize == i)
        .and_then(|s| Some((s.authority, super::earlier::unpack_expiry(s.kind, s.value)?)))
}

/// How large an executor's last run grew (its records and their payload
/// bytes): what its next run reserves at once, so that a run like the last
/// never regrows its per-transfer tables or its payload bytes and holds
/// about what it needs. Read and written without a lock (the executor's
/// runs may run at once: any one's size will do).
#[derive(Debug, Default)]
pub(crate) struct RunSizes {
    records: std::sync::atomic::AtomicU32,
    bytes: std::sync::atomic::AtomicU32,
}

impl RunSizes {
    /// The most records a run reserves for from a hint (a longer run grows
    /// its tables as it goes).
    const MAX_RECORDS: u32 = 4096;
    /// The most payload bytes a run reserves from a hint.
    const MAX_BYTES: u32 = 1 << 20;

    /// The last run's records and payload bytes (capped, and never below
    /// what a first run reserves: a short run, one stopped at its first
    /// receipt say, does not make the next one start smaller); `None`
    /// before a run ended.
    pub(crate) fn last(&self) -> Option<(usize, usize)> {
        use std::sync::atomic::Ordering::Relaxed;
        let records = self.records.load(Relaxed) as usize;
        let bytes = self.bytes.load(Relaxed) as usize;
        (records > 0).then(|| {
            (
                records.max(Transcript::FIRST_RECORDS),
                bytes.max(Transcript::FIRST_BYTES),
            )
        })
    }

    /// Notes the size of a run that ended with `transcript`.
    pub(crate) fn note(&self, transcript: &Transcript) {
        use std::sync::atomic::Ordering::Relaxed;
        let records = u32::try_from(transcript.entries.len()).unwrap_or(u32::MAX);
        let bytes = u32::try_from(transcript.bytes.wanted()).unwrap_or(u32::MAX);
        self.records.store(records.min(Self::MAX_RECORDS), Relaxed);
        self.bytes.store(bytes.min(Self::MAX_BYTES), Relaxed);
    }
}

/// Every transfer of one run, in order: the executor's witness.
#[derive(Debug, Clone)]
pub struct Transcript {
    pub(crate) run_id: u64,
    pub(crate) graph: &'static crate::spec::Graph,
    pub(crate) entries: Vec<Entry>,
    /// The payloads' bytes, written once (read by the turns' contexts too).
    pub(crate) bytes: crate::run::Payloads,
    /// The receipts with details (rejected, escalated, approved), by entry.
    pub(crate) notes: Vec<(u32, Receipt)>,
    /// The turns with tool calls or usage, by the entry each one produced
    /// (the transfer out of the turn; for a turn that stopped the run, the
    /// entry after the last one).
    pub(crate) turns: Vec<(u32, TurnRecord)>,
    /// The root invariants the run is pinned to, as JSON text: recorded on
    /// its first record (`None` for a root with nothing to record, or a run
    /// resumed from records written before roots were recorded).
    pub(crate) root: Option<String>,
    /// The executor's mode, written into every record.
    pub(crate) mode: crate::spec::Mode,
    /// The scope each transfer's sender worked under when it sent it, by
    /// entry, for the transfers whose sender had one (in entry order).
    pub(crate) sender_scopes: Vec<ScopeAt>,
    /// Where the records of fan-outs stand (branch and parent, or join), by
    /// entry: kept beside the entries, which stay small for linear runs.
    pub(crate) lineage: Vec<(u32, crate::spec::Lineage)>,
}

impl Transcript {
    /// The records a run reserves for when nothing says how long it will
    /// be (grown by half as it goes: `payloads::push_grown`).
    const FIRST_RECORDS: usize = 16;
    /// The payload bytes a run reserves when nothing says how many it
    /// will write (grown as it goes: `Payloads::tail`).
    const FIRST_BYTES: usize = 512;

    pub(crate) fn new(run_id: u64, graph: &'static crate::spec::Graph) -> Self {
        Transcript::sized(run_id, graph, None)
    }

    /// An empty transcript with room for a run as large as the executor's
    /// last (`last`, its records and payload bytes: [`RunSizes`]), its
    /// senders' scopes included; without one, sized for a short run (not
    /// reserved for the longest one), its scopes reserved on first use.
    pub(crate) fn sized(
        run_id: u64,
        graph: &'static crate::spec::Graph,
        last: Option<(usize, usize)>,
    ) -> Self {
        let (records, bytes) = last.unwrap_or((Self::FIRST_RECORDS, Self::FIRST_BYTES));
        Transcript {
            run_id,
            graph,
            entries: Vec::with_capacity(records),
            bytes: crate::run::Payloads::with_capacity(bytes),
            notes: Vec::new(),
            turns: Vec::new(),
            root: None,
            mode: crate::spec::Mode::Enforce,
            sender_scopes: Vec::with_capacity(last.map_or(0, |_| records)),
            lineage: Vec::new(),
        }
    }

    /// Gives back what the run reserved and did not use (the up-front
    /// reservation of [`new`](Self::new)): for a transcript kept after its
    /// run stopped (an `Aborted` held until a decision), not on the hot path.
    pub(crate) fn shrink_to_fit(&mut self) {
        self.entries.shrink_to_fit();
        self.bytes.shrink_to_fit();
        self.notes.shrink_to_fit();
        self.turns.shrink_to_fit();
        self.lineage.shrink_to_fit();
        self.sender_scopes.shrink_to_fit();
    }

    /// The scope the sender of the `i`th transfer worked under when it sent
    /// it (`None`: the run's caller, a turn under no scope, or a record
    /// written before sender scopes were recorded).
    #[inline(always)]
    pub(crate) fn sender_scope(&self, i: usize) -> Option<(&'static str, crate::spec::Expiry)> {
        scope_at(&self.sender_scopes, i)
    }

    /// Whether a lease expiring at `lease` ends no later than the scope
    /// the sender of the `i`th transfer worked under (`true` when it
    /// worked under none): `Expiry::within` of [`sender_scope`](Self::sender_scope),
    /// compared with the last scope as it is packed, not unpacked first
    /// (measured: the lookup and the comparison cost a receipt about 40
    /// instructions).
    #[inline(always)]
    pub(crate) fn within_sender_scope(&self, i: usize, lease: crate::spec::Expiry) -> bool {
        use crate::spec::Expiry;
        match self.sender_scopes.last() {
            Some(last) if last.at as usize == i => match (lease, last.kind) {
                (Expiry::AtHop(hop), 2) => u64::from(hop) <= last.value,
                (Expiry::AtUnixMs(ms), 3) => ms <= last.value,
                // Under `Expiry::Never` (1), or a kind that unpacks to no
                // scope (`earlier::unpack_expiry`).
                (_, kind) => !(2..=3).contains(&kind),
            },
            _ => self
                .sender_scope(i)
                .is_none_or(|(_, grantor)| lease.within(grantor)),
        }
    }

    /// Records that the sender of transfer `at` worked under `authority`,
    /// expiring at `expires`.
    // Inlined into the transfer's record (measured: the call cost a
    // transition about 15 instructions).
    #[inline(always)]
    pub(crate) fn push_sender_scope(
        &mut self,
        at: u32,
        authority: &'static str,
        expires: crate::spec::Expiry,
    ) {
        let (kind, value) = super::earlier::pack_expiry(Some(expires));
        if self.sender_scopes.capacity() == 0 {
            // One allocation for a typical run's first rounds, not four
            // small ones.
            reserve_first(&mut self.sender_scopes);
        }
        crate::run::payloads::push_grown(
            &mut self.sender_scopes,
            ScopeAt {
                authority,
                value,
                at,
                kind,
            },
        );
    }

    /// The root invariants the run is pinned to, as the JSON text its first
    /// record carries (`None` when there is nothing to record: a `()` root,
    /// or a run resumed from a ledger written before roots were recorded).
    pub fn root(&self) -> Option<&str> {
        self.root.as_deref()
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
        self.bytes.get(e.start, e.end)
    }

    /// The `i`th transfer's payload as JSON text: the same text
    /// `serde_json::to_string` gives for the value that was handed over.
    pub fn payload(&self, i: usize) -> Result<String, RecordError> {
        let e = self.entries.get(i).ok_or(RecordError::NoSuchRecord(i))?;
        let bytes = self.payload_bytes(i).ok_or(RecordError::NoSuchRecord(i))?;
        crate::encode::to_json(e.format, bytes).map_err(|error| RecordError::Undecodable {
            seq: i,
            error: error.to_string(),
        })
    }

    /// The `i`th entry and the edge it crossed.
    pub(crate) fn entry(
        &self,
        i: usize,
    ) -> Result<(&Entry, &'static crate::spec::EdgeInfo), RecordError> {
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
            redelivery: e.redelivery,
            turn: self.turn(i).cloned(),
            lineage: self.lineage(i).cloned(),
        })
    }

    /// The `i`th transfer as the ledger stores it, chained to `prev_hash`.
    pub(crate) fn ledger_record(
        &self,
        i: usize,
        prev_hash: &str,
    ) -> Result<crate::ledger::LedgerRecord, RecordError> {
        let (e, edge) = self.entry(i)?;
        let (trace_id, span_id) = crate::observe::telemetry::trace_ids();
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
            redelivery: e.redelivery,
            turn: self.turn(i).cloned(),
            trace_id,
            span_id,
            // The run's header: its pinned root, on its first record only.
            root: if i == 0 { self.root.clone() } else { None },
            mode: self.mode,
            sender_scope: self.sender_scope(i).map(|(authority, expires)| {
                crate::spec::SenderScope {
                    authority: Cow::Borrowed(authority),
                    expires,
                }
            }),
            lineage: self.lineage(i).cloned(),
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
            Status::Rejected
            | Status::Escalated
            | Status::Approved
            | Status::Audited
            | Status::TurnFailed => self
                .notes
                .iter()
                .rev()
                .find(|(at, _)| *at as usize == i)?
                .1
                .clone(),
        })
    }

    /// Marks entry `i` with a receipt that has details.
    pub(crate) fn note(&mut self, i: usize, receipt: Receipt) {
        let status = match &receipt {
            Receipt::Pending => Status::Pending,
            Receipt::Accepted => Status::Accepted,
            Receipt::Rejected { .. } => Status::Rejected,
            Receipt::Escalated { .. } => Status::Escalated,
            Receipt::Approved { .. } => Status::Approved,
            Receipt::Audited { .. } => Status::Audited,
            Receipt::TurnFailed { .. } => Status::TurnFailed,
        };
        if let Some(e) = self.entries.get_mut(i) {
            e.status = status;
            if status != Status::Pending && status != Status::Accepted {
                self.notes.push((i as u32, receipt));
            }
        }
    }

    /// The last rejection or escalation reason recorded, if any.
    pub fn last_rejection(&self) -> Option<&RejectReason> {
        self.notes.iter().rev().find_map(|(_, r)| match r {
            Receipt::Rejected { reason } => Some(reason),
            Receipt::Escalated {
                reason: Escalation::Rejected { reason },
            } => Some(reason),
            _ => None,
        })
    }

    /// The turn that produced entry `i` (its tool calls and usage), if it
    /// had any.
    pub fn turn(&self, i: usize) -> Option<&TurnRecord> {
        self.turns
            .iter()
            .find(|(at, _)| *at as usize == i)
            .map(|(_, t)| t)
    }

    /// Where the `i`th transfer stands in a fan-out (its branch and parent,
    /// or the join); `None` outside fan-outs.
    pub fn lineage(&self, i: usize) -> Option<&crate::spec::Lineage> {
        // Searched from the end: a fan-out's records are written last.
        self.lineage
            .iter()
            .rev()
            .find(|(at, _)| *at as usize == i)
            .map(|(_, l)| l)
    }

    /// The open questions handed to the caller with the workflow output
    /// (received by the last agent, neither resolved nor escalated).
    pub fn unresolved(&self) -> &[String] {
        self.turns
            .iter()
            .rev()
            .find_map(|(_, t)| (!t.unresolved.is_empty()).then_some(t.unresolved.as_slice()))
            .unwrap_or(&[])
    }

    /// Every turn that made tool calls or charged usage, with the sequence
    /// number of the transfer it produced (or `len()` for a turn that
    /// stopped the run).
    pub fn turns(&self) -> impl Iterator<Item = (usize, &TurnRecord)> {
        self.turns.iter().map(|(at, t)| (*at as usize, t))
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
                Receipt::Escalated { reason } => format!("ESCALATED: {reason}"),
                Receipt::Approved { by, edited } => {
                    format!("approved by {by}{}", if *edited { ", edited" } else { "" })
                }
                Receipt::Audited { reasons } => format!("AUDIT: {}", audit_line(reasons)),
                Receipt::TurnFailed { error } => format!("TURN FAILED: {error}"),
            };
            let lineage = match &r.lineage {
                Some(l) => format!(" ({l})"),
                None => String::new(),
            };
            writeln!(
                f,
                "#{seq} hop {hop} {from} -> {to}{lineage} [{receipt}] {ty} {payload}",
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

/// The verdicts of an audited receipt on one line:
/// `would reject: <reason>; would reject: <reason>`.
pub(crate) fn audit_line(reasons: &[RejectReason]) -> String {
    reasons
        .iter()
        .map(|r| format!("would reject: {r}"))
        .collect::<Vec<_>>()
        .join("; ")
}

// Defined here, beside the transcript it reads (the model layer sits below
// the run layer and does not know transcripts).
impl crate::llm::RecordedModel {
    /// The replies recorded in a run's transcript.
    pub fn from_transcript(transcript: &Transcript) -> Self {
        crate::llm::RecordedModel::from_turns(transcript.turns().map(|(_, t)| t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static GRAPH: crate::spec::Graph = crate::spec::Graph {
        name: "sizes",
        agents: &[],
        edges: &[],
        tools: &[],
        input: "()",
        output: "()",
        max_hops: 0,
    };

    #[test]
    fn a_sender_scope_is_found_at_the_last_record_and_before_it() {
        use crate::spec::Expiry;
        let mut t = Transcript::new(1, &GRAPH);
        assert_eq!(t.sender_scope(0), None);
        t.push_sender_scope(1, "A", Expiry::AtHop(3));
        t.push_sender_scope(4, "B", Expiry::Never);
        t.push_sender_scope(5, "C", Expiry::AtUnixMs(7));
        // The last (looked up without a loop), then earlier ones.
        assert_eq!(t.sender_scope(5), Some(("C", Expiry::AtUnixMs(7))));
        assert_eq!(t.sender_scope(4), Some(("B", Expiry::Never)));
        assert_eq!(t.sender_scope(1), Some(("A", Expiry::AtHop(3))));
        // Records whose sender had no scope, before, between and after.
        for i in [0, 2, 3, 6, 100] {
            assert_eq!(t.sender_scope(i), None, "record {i}");
        }
    }

    #[test]
    fn a_lease_within_a_sender_scope_answers_as_the_scope_unpacked() {
        use crate::spec::Expiry;
        let expiries = [
            Expiry::Never,
            Expiry::AtHop(0),
            Expiry::AtHop(3),
            Expiry::AtHop(4),
            Expiry::AtHop(u32::MAX),
            Expiry::AtUnixMs(0),
            Expiry::AtUnixMs(7),
            Expiry::AtUnixMs(8),
            Expiry::AtUnixMs(u64::MAX),
        ];
        let mut checked = 0;
        for grantor in expiries {
            let mut t = Transcript::new(1, &GRAPH);
            t.push_sender_scope(1, "A", Expiry::AtHop(3));
            t.push_sender_scope(4, "B", grantor);
            for lease in expiries {
                // The last scope (the packed comparison), an earlier one,
                // and records with none.
                for i in [0, 1, 2, 4, 5] {
                    let unpacked = t.sender_scope(i).is_none_or(|(_, g)| lease.within(g));
                    assert_eq!(
                        t.within_sender_scope(i, lease),
                        unpacked,
                        "{lease:?} under {grantor:?} at record {i}"
                    );
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, 9 * 9 * 5);
        // Packed kinds that unpack to no scope bound nothing.
        let mut t = Transcript::new(1, &GRAPH);
        t.push_sender_scope(0, "A", Expiry::AtHop(1));
        for kind in [0, 4, 255] {
            t.sender_scopes[0].kind = kind;
            assert_eq!(t.sender_scope(0), None);
            assert!(t.within_sender_scope(0, Expiry::AtHop(2)), "kind {kind}");
        }
    }

    /// A transcript of `records` transfers of `each` payload bytes.
    fn grown(records: usize, each: usize) -> Transcript {
        let mut t = Transcript::new(1, &GRAPH);
        for _ in 0..records {
            let start = t.bytes.len() as u32;
            t.bytes.extend_from_slice(&vec![0; each]);
            crate::run::payloads::push_grown(
                &mut t.entries,
                Entry {
                    hop: 0,
                    edge: 0,
                    status: Status::Accepted,
                    redelivery: false,
                    format: crate::spec::PayloadFormat::Msgpack,
                    start,
                    end: t.bytes.len() as u32,
                    link: crate::run::earlier::NONE,
                    at_us: 0,
                },
            );
        }
        t
    }

    #[test]
    fn a_run_reserves_what_the_last_run_took() {
        let sizes = RunSizes::default();
        assert_eq!(sizes.last(), None, "no run has ended yet");
        let last = grown(21, 140);
        // Grown by half as it went: more room than it took.
        assert!(last.entries.capacity() > 21);
        sizes.note(&last);
        // Room for the last payload's size again, and for what a writer
        // puts past its end before cutting it off.
        assert_eq!(
            sizes.last(),
            Some((21, 21 * 140 + crate::encode::OVERWRITE))
        );
        let next = Transcript::sized(2, &GRAPH, sizes.last());
        assert_eq!(next.sender_scopes.capacity(), 21);
        assert_eq!(next.entries.capacity(), 21);
        assert_eq!(next.bytes.len(), 0);
        // The next run's 21 transfers fit without growing either table.
        let mut next = next;
        for _ in 0..21 {
            let tail = next.bytes.tail();
            let room = tail.capacity() - tail.len();
            assert!(room >= 140, "{room} bytes of room left");
            tail.extend_from_slice(&[0; 140]);
        }
        assert_eq!(next.bytes.len(), 21 * 140);
    }

    #[test]
    fn a_run_ending_with_a_small_payload_is_not_grown_again_next_time() {
        // Twenty handoffs, then a small output: the buffer is asked for
        // room for another handoff-sized payload before the output.
        let sizes = RunSizes::default();
        let write = |t: &mut Transcript| {
            for each in [140; 20].into_iter().chain([10]) {
                t.bytes.extend_from_slice(&vec![0; each]);
                t.entries.push(grown(1, 0).entries[0]);
            }
        };
        let mut first = Transcript::new(1, &GRAPH);
        write(&mut first);
        assert_eq!(first.bytes.len(), 20 * 140 + 10);
        sizes.note(&first);
        assert_eq!(
            sizes.last(),
            Some((21, 21 * 140 + crate::encode::OVERWRITE))
        );
        let mut next = Transcript::sized(2, &GRAPH, sizes.last());
        let reserved = next.bytes.tail().capacity();
        write(&mut next);
        assert_eq!(
            next.bytes.tail().capacity(),
            reserved,
            "the next run grew its buffer"
        );
    }

    #[test]
    fn a_short_run_does_not_make_the_next_one_start_smaller() {
        let sizes = RunSizes::default();
        sizes.note(&grown(1, 40));
        assert_eq!(
            sizes.last(),
            Some((Transcript::FIRST_RECORDS, Transcript::FIRST_BYTES))
        );
    }

    #[test]
    fn a_very_long_run_is_not_reserved_for_whole() {
        let sizes = RunSizes::default();
        sizes.note(&grown(5000, 300));
        assert_eq!(
            sizes.last(),
            Some((RunSizes::MAX_RECORDS as usize, RunSizes::MAX_BYTES as usize))
        );
    }
}
