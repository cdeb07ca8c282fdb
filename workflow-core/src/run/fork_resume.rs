//! Resuming a run cut inside a fan-out: the branches whose outcome is
//! recorded are kept (their typed outcome read back from the record), the
//! cut ones run again, then the join as usual.
//!
//! A fan-out commits its records in a fixed order (every branch's start in
//! branch order, then every accepted branch's outcome in branch order, then
//! the join), so a crash leaves a prefix of that order:
//!
//! - **every start recorded** (and perhaps some outcomes): the fork state is
//!   rebuilt from the starts' payloads ([`Workflow::restore_fork`]); the
//!   fork turn runs as in the first run, except that a recorded start is not
//!   recorded again (its receipt is the recorded one), a recorded outcome is
//!   read back instead of running the branch's body, and a cut branch's
//!   body runs again with the tool calls journaled under it served, not
//!   made again;
//! - **some starts recorded** (or a workflow whose starts alone do not say
//!   how many branches there were: `restore_fork` gives `None`): the inputs
//!   of the missing branches exist nowhere, so the fan-out agent's turn runs
//!   again (its journaled tool calls served, as any cut turn's; its record
//!   and usage, already on the first start, not kept twice), and the fork
//!   turn then goes on as above: a branch whose start is recorded must be
//!   handed the input recorded for it (anything else is refused, never
//!   recorded twice).
//!
//! Either way, the resumed run's records continue the chain in the order a
//! run never cut commits them: its records are those of an uncut run.

use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::ledger::LedgerRecord;
use crate::run::fork::{BranchState, BranchTurn, ForkRun};
use crate::run::{Runtime, Status, TurnStart};
use crate::spec::{Agent, Branch, Lineage, Node, Receipt, RecordedPayload, RunError, Usage};
use crate::spec::{Workflow, agent_name};

/// The records a fan-out cut by a crash already has, for its `fork`.
pub(crate) struct ForkResume {
    /// The record the fan-out agent's turn worked on.
    pub(super) at: u32,
    /// By branch index: the start record's sequence number and hash, for
    /// the starts recorded (a prefix of the branches).
    pub(super) starts: Vec<(u32, Arc<str>)>,
    /// By branch index: the records the branch's turns handed on, in
    /// order (its steps, then its outcome), with their hashes.
    pub(super) chain: Vec<Vec<(u32, Arc<str>)>>,
    /// When the fan-out agent's turn runs again: what the run had spent
    /// with its recorded turn, restored when the fan-out opens (the turn
    /// run again is not counted twice, nor its record kept twice).
    pub(super) spent: Option<Usage>,
    /// When the fan-out agent's turn runs again: the sequence number its
    /// tool calls are journaled under (the first start's) and the hash they
    /// are bound to (the record it works on).
    pub(super) rerun: Option<(u32, Arc<str>)>,
    /// A fan-out inside a branch: its join, when recorded (its sequence
    /// number and hash).
    pub(super) join: Option<(u32, Arc<str>)>,
    /// The fan-outs inside its branches opened before the crash, each with
    /// its records.
    pub(super) nested: Vec<ForkResume>,
}

/// The records of one fan-out read back in order, each checked to follow
/// its branch's last.
struct Scan {
    /// The record its agent's turn worked on.
    at: u32,
    starts: Vec<(u32, Arc<str>)>,
    /// By branch: the records its turns handed on.
    chain: Vec<Vec<(u32, Arc<str>)>>,
    /// By branch: its last record (the next one's parent).
    last: Vec<u32>,
    /// By branch: whether its outcome is recorded.
    ended: Vec<bool>,
    /// A nested fan-out's join.
    join: Option<(u32, Arc<str>)>,
    /// A nested fan-out cut before its starts were all recorded: what the
    /// run had spent, its fanning turn's recorded usage counted once.
    spent: Option<Usage>,
}

impl Scan {
    fn new(at: u32) -> Self {
        Scan {
            at,
            starts: Vec::new(),
            chain: Vec::new(),
            last: Vec::new(),
            ended: Vec::new(),
            join: None,
            spent: None,
        }
    }

    /// Branch `branch`'s start, recorded at `seq` (its receiver's turn
    /// `ran`, or it was refused): the next of the starts, before any branch
    /// handed anything on.
    fn start(&mut self, seq: u32, hash: Arc<str>, branch: u16, ran: bool) -> Result<(), String> {
        let stepped = self.chain.iter().any(|c| !c.is_empty());
        if usize::from(branch) != self.starts.len() || stepped {
            return Err(format!(
                "record #{seq} starts branch {branch} of the fan-out of #{} out of order",
                self.at
            ));
        }
        self.starts.push((seq, hash));
        self.chain.push(Vec::new());
        self.last.push(seq);
        // Refused at its receipt: the branch ended there.
        self.ended.push(!ran);
        Ok(())
    }

    /// What a turn of branch `branch` handed on, recorded at `seq`: it
    /// follows the branch's last record; an outcome (`!step`) ends it.
    fn follow(
        &mut self,
        seq: u32,
        hash: Arc<str>,
        branch: u16,
        parent: u32,
        step: bool,
        ran: bool,
    ) -> Result<(), String> {
        let k = usize::from(branch);
        if self.last.get(k) != Some(&parent) || self.ended.get(k).copied().unwrap_or(true) {
            return Err(format!(
                "record #{seq} does not follow the last record of branch {branch} of the fan-out of #{}",
                self.at
            ));
        }
        // An outcome, or a step refused at its receipt, ends the branch.
        self.ended[k] = !step || !ran;
        self.last[k] = seq;
        self.chain[k].push((seq, hash));
        Ok(())
    }

    /// The branch still running whose last record is `seq`.
    fn open_branch(&self, seq: u32) -> Option<usize> {
        (0..self.last.len()).find(|&k| self.last[k] == seq && !self.ended[k])
    }
}

impl ForkResume {
    /// The fan-out agent's turn run again: the record it works on, the
    /// sequence number of its journal, the hash its journal binds to.
    pub(super) fn rerun_at(&self) -> Option<(usize, u32, Arc<str>)> {
        let (turn_seq, anchor) = self.rerun.clone()?;
        Some((self.at as usize, turn_seq, anchor))
    }
}

impl<'x, W: Workflow> Runtime<'x, W> {
    /// Prepares run `run_id`, restored from `records` whose last is inside
    /// the fan-out opened after record `at`, to carry on: the state to run
    /// next (the fork state, or the fan-out agent's turn again).
    pub(crate) fn resume_inside_fork(
        &mut self,
        ledger: &dyn crate::ledger::Ledger,
        records: &[LedgerRecord],
        at: u32,
    ) -> Result<W::State, RunError> {
        let run_id = self.transcript.run_id;
        let refuse = |why: String| RunError::Resume(format!("run {run_id}: {why}"));
        let worked_on = self
            .transcript
            .entries
            .get(at as usize)
            .and_then(|e| W::GRAPH.edges.get(e.edge as usize))
            .map(|e| e.to);
        let Some(Node::Agent(from)) = worked_on else {
            return Err(refuse(format!(
                "the fan-out of record #{at} does not follow an agent's turn"
            )));
        };
        // The fan-out's records, and those of the fan-outs inside its
        // branches (each after the fan-out whose branch it is in: `parent`,
        // the scan and the branch).
        let mut scans: Vec<Scan> = vec![Scan::new(at)];
        let mut parents: Vec<(usize, usize)> = vec![(0, 0)];
        let mut accepted = 0u32;
        let ran = |seq: u32| {
            self.transcript
                .entries
                .get(seq as usize)
                .is_some_and(|e| e.status.ran())
        };
        for r in records.iter().filter(|r| r.seq > at) {
            let Some(lineage) = &r.lineage else { continue };
            let hash = || Arc::from(r.hash.as_str());
            let fork = lineage.fork();
            let scan = scans.iter().position(|s| s.at == fork);
            match (lineage, scan) {
                (Lineage::Start { branch, .. }, Some(i)) => {
                    scans[i]
                        .start(r.seq, hash(), *branch, ran(r.seq))
                        .map_err(refuse)?;
                    accepted += u32::from(ran(r.seq));
                }
                // A fan-out inside branch `k` of a fan-out read so far: its
                // first start is what the turn that fanned out handed on.
                (Lineage::Start { branch: 0, .. }, None) => {
                    let place = scans
                        .iter()
                        .enumerate()
                        .find_map(|(p, s)| Some((p, s.open_branch(fork)?)));
                    let Some((p, k)) = place else {
                        continue;
                    };
                    let mut scan = Scan::new(fork);
                    scan.start(r.seq, hash(), 0, ran(r.seq)).map_err(refuse)?;
                    scans[p].chain[k].push((r.seq, hash()));
                    scans.push(scan);
                    parents.push((p, k));
                    accepted += u32::from(ran(r.seq));
                }
                (
                    Lineage::Step { branch, parent, .. } | Lineage::Outcome { branch, parent, .. },
                    Some(i),
                ) => {
                    let step = matches!(lineage, Lineage::Step { .. });
                    scans[i]
                        .follow(r.seq, hash(), *branch, *parent, step, ran(r.seq))
                        .map_err(refuse)?;
                    if step {
                        accepted += u32::from(ran(r.seq));
                    }
                }
                // The join of a map inside a branch that was handed no
                // item: the mapping turn's one record.
                (Lineage::Join { heads, .. }, None) if heads.is_empty() => {
                    let place = scans
                        .iter()
                        .enumerate()
                        .find_map(|(p, s)| Some((p, s.open_branch(fork)?)));
                    let Some((p, k)) = place else {
                        continue;
                    };
                    let mut scan = Scan::new(fork);
                    scan.join = Some((r.seq, hash()));
                    scans[p].chain[k].push((r.seq, hash()));
                    scans[p].last[k] = r.seq;
                    scans.push(scan);
                    parents.push((p, k));
                    accepted += u32::from(ran(r.seq));
                }
                (Lineage::Join { .. }, Some(0)) => {
                    return Err(refuse(format!(
                        "the fan-out of #{at} is joined (record #{}) yet records follow its branches",
                        r.seq
                    )));
                }
                // A nested fan-out's join: its agent's turn is the next of
                // the branch the fan-out is in.
                (Lineage::Join { .. }, Some(i)) => {
                    let scan = &mut scans[i];
                    if scan.join.is_some() || scan.ended.iter().any(|e| !e) {
                        return Err(refuse(format!(
                            "record #{} joins the fan-out of #{fork} before its branches ended",
                            r.seq
                        )));
                    }
                    scan.join = Some((r.seq, hash()));
                    let (p, k) = parents[i];
                    scans[p].last[k] = r.seq;
                    accepted += u32::from(ran(r.seq));
                }
                _ => {}
            }
        }
        // A nested fan-out cut before all its starts were recorded: the
        // inputs of the others exist nowhere, so the turn that fanned out
        // runs again (its journaled calls served; its record, on the first
        // start, kept once, its usage counted once).
        for i in 1..scans.len() {
            let first = scans[i].starts.first().map(|(seq, _)| *seq);
            let edge = first
                .and_then(|seq| self.transcript.entries.get(seq as usize))
                .map(|e| e.edge);
            let Some(first) = first else {
                // An empty map's join: recorded whole.
                continue;
            };
            let info = W::FORKS
                .iter()
                .find(|f| f.fork.branches.first().map(|b| b.start) == edge);
            let Some(info) = info else {
                return Err(refuse(format!(
                    "the fan-out of #{} is not one of the workflow's",
                    scans[i].at
                )));
            };
            // A map's starts do not say how many items it had: its mapping
            // turn is read back only once its join is recorded.
            let cut = match info.map {
                Some(_) => scans[i].join.is_none(),
                None => scans[i].starts.len() < info.fork.branches.len(),
            };
            if cut {
                let (p, k) = parents[i];
                if scans[p].chain[k].last().map(|(seq, _)| *seq) != Some(first) {
                    return Err(refuse(format!(
                        "records follow the fan-out of #{} cut before its starts were all recorded",
                        scans[i].at
                    )));
                }
                scans[p].chain[k].pop();
                // What the run had spent with the turn's recorded record,
                // restored once it fans out again (its record on the first
                // start stays the recorded one).
                scans[i].spent = Some(self.spent);
            }
        }
        // The hop counter as it stood when the fan-out opened: each
        // branch's receipt counts its hop again, in branch order.
        self.hops = self.hops.saturating_sub(accepted);
        self.turn_input = at as usize;
        // Each nested fan-out's records under the fan-out it is in (a
        // nested one is read after its parent: built from the last).
        let mut nested: Vec<Vec<ForkResume>> = (0..scans.len()).map(|_| Vec::new()).collect();
        let mut resume = None;
        for (i, scan) in scans.into_iter().enumerate().rev() {
            let built = ForkResume {
                at: scan.at,
                starts: scan.starts,
                chain: scan.chain,
                spent: if i == 0 { None } else { scan.spent },
                rerun: None,
                join: scan.join,
                nested: std::mem::take(&mut nested[i]),
            };
            if i == 0 {
                resume = Some(built);
            } else {
                nested[parents[i].0].push(built);
            }
        }
        let Some(mut resume) = resume else {
            return Err(refuse(format!("the fan-out of #{at} has no records")));
        };
        let bytes: Vec<(crate::spec::PayloadFormat, Vec<u8>)> = resume
            .starts
            .iter()
            .map(|(seq, _)| {
                let r = &records[*seq as usize];
                r.payload_bytes()
                    .map(|b| (r.payload_format, b))
                    .map_err(|e| refuse(e.to_string()))
            })
            .collect::<Result<_, _>>()?;
        let inputs: Vec<RecordedPayload<'_>> = bytes
            .iter()
            .map(|(format, bytes)| RecordedPayload {
                format: *format,
                bytes,
            })
            .collect();
        let restored = W::restore_fork(from, &inputs).map_err(refuse)?;
        let state = if let Some(state) = restored {
            state
        } else {
            // The fan-out agent's turn again: its record (and usage) is on
            // the first start, which stays; the turn's tool calls are
            // journaled under that start's sequence number.
            let Some(&(first, _)) = resume.starts.first() else {
                return Err(refuse(format!(
                    "the fan-out of #{at} has no recorded branch"
                )));
            };
            resume.spent = Some(self.spent);
            resume.rerun = Some((first, Arc::from(records[at as usize].hash.as_str())));
            let mut before = Usage::default();
            for (i, turn) in &self.transcript.turns {
                if *i < first {
                    before.add(&turn.usage);
                }
            }
            self.spent = before;
            let anchor = &records[at as usize].hash;
            let journaled = ledger
                .tool_calls(run_id, first)
                .map_err(|e| refuse(e.to_string()))?;
            crate::ledger::check_turn_journal(run_id, first, anchor, &journaled)
                .map_err(RunError::Journal)?;
            if !journaled.is_empty() {
                let calls = journaled.into_iter().map(|entry| entry.call).collect();
                self.serve_recorded(crate::ledger::RecordedCalls::resumed(first, calls));
            }
            let r = &records[at as usize];
            let bytes = r.payload_bytes().map_err(|e| refuse(e.to_string()))?;
            let payload = RecordedPayload {
                format: r.payload_format,
                bytes: &bytes,
            };
            let state = W::restore(from, &payload).map_err(refuse)?;
            self.next_turn = TurnStart::Decided;
            state
        };
        self.resume_fork = Some(Box::new(resume));
        Ok(state)
    }

    /// Branch `branch`'s start as it is recorded (at `start`, whose hash is
    /// `anchor`): its receipt is the recorded one; an outcome recorded too
    /// is read back at settle time; otherwise its body runs again, served
    /// the tool calls journaled under it.
    pub(super) fn branch_recorded<A: Agent<W>>(
        &mut self,
        fork: &mut ForkRun,
        branch: u16,
        input: A::Input,
        (start, anchor): (u32, Arc<str>),
    ) -> Result<BranchTurn<'x, W, A>, RunError>
    where
        A::Input: Serialize,
    {
        let run_id = self.transcript.run_id;
        // The input must be the recorded one (a fan-out agent run again may
        // hand on another): a branch's start is never recorded twice.
        let mut bytes = Vec::new();
        let same = crate::encode::encode(&mut bytes, &input).is_ok()
            && self.transcript.payload_bytes(start as usize) == Some(&bytes[..]);
        if !same {
            return Err(RunError::Resume(format!(
                "run {run_id}: branch {branch} of the fan-out of #{} is handed an input other than the one its start (#{start}) recorded; the fan-out agent's turn, run again after the crash, did not repeat itself",
                fork.at()
            )));
        }
        let Some(head) = fork.heads.get_mut(branch as usize) else {
            return Err(RunError::Protocol(format!(
                "branch {branch} of the fan-out of #{} is not one of its branches",
                fork.at()
            )));
        };
        *head = start;
        let contract = A::contract(&input);
        let scope = contract.as_ref().map(|c| (c.authority, c.expires));
        let mut turn = BranchTurn::new(branch, start, scope);
        if let Some(reason) = self.recorded_refusal(branch, start, "start")? {
            turn.state = BranchState::Refused(reason);
            return Ok(turn);
        }
        self.resume_turn(fork, turn, input, scope, anchor)
    }

    /// The recorded receipt of branch `branch`'s transfer at `seq` (its
    /// `what`: start or step): `Some` with the reason it was refused,
    /// `None` when its receiver's turn ran, an error for a receipt a
    /// branch's transfer never gets.
    pub(super) fn recorded_refusal(
        &self,
        branch: u16,
        seq: u32,
        what: &str,
    ) -> Result<Option<crate::spec::RejectReason>, RunError> {
        match self.transcript.receipt(seq as usize) {
            Some(Receipt::Rejected { reason }) => Ok(Some(reason)),
            _ if self
                .transcript
                .entries
                .get(seq as usize)
                .is_some_and(|e| e.status.ran()) =>
            {
                Ok(None)
            }
            other => Err(RunError::Resume(format!(
                "run {}: branch {branch}'s {what} (#{seq}) has a receipt a branch's {what} never gets: {other:?}",
                self.transcript.run_id
            ))),
        }
    }

    /// A resumed branch turn whose transfer (`turn.start`, whose hash is
    /// `anchor`) is recorded accepted: what it handed on, when that is
    /// recorded too, is read back at settle time; otherwise its body runs
    /// again, served the tool calls journaled under it.
    pub(super) fn resume_turn<A: Agent<W>>(
        &mut self,
        fork: &mut ForkRun,
        mut turn: BranchTurn<'x, W, A>,
        input: A::Input,
        scope: Option<(&'static str, crate::spec::Expiry)>,
        anchor: Arc<str>,
    ) -> Result<BranchTurn<'x, W, A>, RunError> {
        let contract = A::contract(&input);
        self.turn.scope = scope;
        self.turn_input = turn.start as usize;
        self.begin_turn(contract.as_ref());
        turn.open = std::mem::take(&mut self.open);
        if fork.deferred {
            turn.state = BranchState::Accepted {
                input,
                anchor,
                resumed: true,
            };
            return Ok(turn);
        }
        self.resume_ready(fork, &mut turn, input, anchor)?;
        Ok(turn)
    }

    /// The rest of [`resume_turn`](Self::resume_turn), once the sequence
    /// number of the record the turn writes is known
    /// (`fork.next_outcome`): that record read back when it is written,
    /// otherwise the turn's body readied, served the calls journaled under
    /// it.
    pub(super) fn resume_ready<A: Agent<W>>(
        &mut self,
        fork: &mut ForkRun,
        turn: &mut BranchTurn<'x, W, A>,
        input: A::Input,
        anchor: Arc<str>,
    ) -> Result<(), RunError> {
        let run_id = self.transcript.run_id;
        let (branch, start) = (turn.branch, turn.start);
        let turn_seq = fork.next_outcome;
        let recorded = fork.resume.as_ref().and_then(|r| {
            r.chain
                .get(branch as usize)
                .and_then(|c| c.get(usize::from(turn.depth)))
                .map(|(seq, _)| *seq)
        });
        if let Some(seq) = recorded {
            if seq != turn_seq {
                return Err(RunError::Resume(format!(
                    "run {run_id}: branch {branch}'s record #{seq} is where its turn's was to be #{turn_seq}"
                )));
            }
            fork.next_outcome = fork.next_outcome.saturating_add(1);
            self.hops += 1;
            let value = match self.transcript.receipt(seq as usize) {
                Some(Receipt::TurnFailed { error }) => self.returned_value::<A>(&error),
                _ => true,
            };
            turn.state = BranchState::Recorded { seq, value };
            return Ok(());
        }
        // A cut branch: its turn again, the calls it made before the crash
        // served (checked where they are served, as a cut turn's are).
        let journaled = match self.ledger {
            Some(ledger) => ledger
                .tool_calls(run_id, turn_seq)
                .map_err(|e| RunError::Resume(e.to_string()))?,
            None => Vec::new(),
        };
        crate::ledger::check_turn_journal(run_id, turn_seq, &anchor, &journaled)
            .map_err(RunError::Journal)?;
        let calls = (!journaled.is_empty()).then(|| {
            crate::ledger::RecordedCalls::resumed(
                turn_seq,
                journaled.into_iter().map(|entry| entry.call).collect(),
            )
        });
        let mut owned = self.owned_turn::<A>(turn.scope);
        owned.turn.lease_seq = start;
        self.progress::<A>();
        self.start_body(fork, turn, input, owned, anchor, calls);
        Ok(())
    }

    /// A resumed branch's step, recorded at `seq` (what turn `depth` of
    /// branch `branch` handed on to its next agent `B`): `B`'s input read
    /// back from it, its receipt the recorded one, and `B`'s turn resumed
    /// as a recorded start's is.
    #[doc(hidden)] // for generated fork turns and hand-written workflows
    pub fn step_recorded<B: Agent<W>>(
        &mut self,
        fork: &mut ForkRun,
        branch: u16,
        depth: u16,
        seq: u32,
    ) -> Result<BranchTurn<'x, W, B>, RunError>
    where
        B::Input: DeserializeOwned,
    {
        let run_id = self.transcript.run_id;
        let i = seq as usize;
        let Some(entry) = self.transcript.entries.get(i) else {
            return Err(RunError::Protocol(format!(
                "branch {branch}'s step #{seq} is not in the transcript"
            )));
        };
        let format = entry.format;
        let bytes = self.transcript.payload_bytes(i).unwrap_or_default();
        let input: B::Input = crate::encode::decode(format, bytes)
            .map_err(|error| RunError::Unreadable { seq, error })?;
        let anchor = fork
            .resume
            .as_ref()
            .and_then(|r| r.chain.get(branch as usize))
            .and_then(|c| c.get(usize::from(depth)))
            .filter(|(s, _)| *s == seq)
            .map(|(_, hash)| hash.clone());
        let Some(anchor) = anchor else {
            return Err(RunError::Resume(format!(
                "run {run_id}: branch {branch}'s step #{seq} is not one its records hold"
            )));
        };
        let Some(head) = fork.heads.get_mut(branch as usize) else {
            return Err(RunError::Protocol(format!(
                "branch {branch} of the fan-out of #{} is not one of its branches",
                fork.at()
            )));
        };
        *head = seq;
        let mut turn = BranchTurn::new(branch, seq, None);
        turn.depth = depth.saturating_add(1);
        if let Some(reason) = self.recorded_refusal(branch, seq, "step")? {
            turn.state = BranchState::Refused(reason);
            return Ok(turn);
        }
        let scope = B::contract(&input).map(|c| (c.authority, c.expires));
        turn.scope = scope;
        self.resume_turn(fork, turn, input, scope, anchor)
    }

    /// What a branch whose outcome is recorded (at `seq`) ended with, read
    /// back typed from its record.
    #[doc(hidden)] // for generated fork turns and hand-written workflows
    pub fn settle_recorded<A: Agent<W>, O: DeserializeOwned>(
        &mut self,
        fork: &mut ForkRun,
        branch: u16,
        seq: u32,
    ) -> Result<Branch<O>, RunError> {
        let run_id = self.transcript.run_id;
        let Some(head) = fork.heads.get_mut(branch as usize) else {
            return Err(RunError::Protocol(format!(
                "branch {branch} of the fan-out of #{} is not one of its branches",
                fork.at()
            )));
        };
        *head = seq;
        self.carry_unresolved(fork, seq);
        let i = seq as usize;
        match self.transcript.receipt(i) {
            Some(Receipt::Rejected { reason }) => Ok(Branch::Rejected { reason }),
            Some(Receipt::TurnFailed { error }) => Ok(self.failed_outcome::<A, O>(error)),
            _ if self.transcript.entries[i].status == Status::Accepted
                || self.transcript.entries[i].status == Status::Audited =>
            {
                let format = self.transcript.entries[i].format;
                let bytes = self.transcript.payload_bytes(i).unwrap_or_default();
                crate::encode::decode::<O>(format, bytes)
                    .map(Branch::Done)
                    .map_err(|error| RunError::Unreadable { seq, error })
            }
            other => Err(RunError::Resume(format!(
                "run {run_id}: branch {branch}'s outcome (#{seq}) has a receipt a branch's outcome never gets: {other:?}"
            ))),
        }
    }

    /// What the turn recorded at `seq` could not carry (its unresolved
    /// questions), for the join's turn.
    pub(super) fn carry_unresolved(&self, fork: &mut ForkRun, seq: u32) {
        if let Some((_, turn)) = self.transcript.turns.iter().find(|(i, _)| *i == seq) {
            for q in &turn.unresolved {
                if !fork.carried.contains(q) {
                    fork.carried.push(q.clone());
                }
            }
        }
    }

    /// Whether a branch turn recorded as failed with `error` had returned a
    /// value, which a quorum counted when the run recorded it: a broken
    /// post-condition, checked on a returned value only, fails it
    /// afterwards. (A tool's failure or a spent budget fail a turn whether
    /// its body returned a value or not; the record does not say which.)
    fn returned_value<A: Agent<W>>(&self, error: &str) -> bool {
        let agent = agent_name::<W>(A::INDEX);
        W::GRAPH
            .agents
            .get(usize::from(A::INDEX))
            .map_or(&[][..], |a| a.post)
            .iter()
            .any(|c| {
                let broke = RunError::PostCondition {
                    agent,
                    condition: c.expr,
                    message: c.message,
                };
                broke.to_string() == error
            })
    }

    /// The outcome a branch whose turn failed with `error` (as its record
    /// says it) ended with: timed out or cancelled when the error is the
    /// one those outcomes are recorded with, failed otherwise.
    pub(super) fn failed_outcome<A: Agent<W>, O>(&self, error: String) -> Branch<O> {
        let agent = agent_name::<W>(A::INDEX);
        let timeouts = A::TIMEOUT
            .map(|t| t.as_millis() as u64)
            .into_iter()
            .chain([0]);
        for after_ms in timeouts {
            if (RunError::Timeout { agent, after_ms }).to_string() == error {
                return Branch::TimedOut { after_ms };
            }
        }
        if let Some(after_ms) = self.limits.deadline_ms
            && (RunError::DeadlinePassed { agent, after_ms }).to_string() == error
        {
            return Branch::Cancelled { reason: error };
        }
        // Dropped unfinished under a quorum (`finish` records it so).
        if let Some(reason) = error.strip_prefix("cancelled: ")
            && super::fork::quorum_of(reason).is_some()
        {
            return Branch::Cancelled {
                reason: reason.to_owned(),
            };
        }
        Branch::Failed { error }
    }
}
