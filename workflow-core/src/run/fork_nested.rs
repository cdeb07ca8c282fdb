//! A fan-out inside a branch of another (nested): an agent of an outer
//! branch hands off to several receivers at once, and their join, inside
//! the same outer branch, hands on as the branch's next turn.
//!
//! The outer fan-out's branches run in rounds, each round's accepted turns
//! numbered at its start by the one record each writes when it is settled
//! ([`Runtime::ready`]). A turn that fans out writes more than one record,
//! so the nested fan-out is split in two:
//!
//! 1. when the turn is settled, in branch order with the round's other
//!    turns, its first branch's start is recorded
//!    ([`Runtime::fan_out_in_branch`]): the one record of its settle, which
//!    also holds the turn's record;
//! 2. once every turn of the round is settled, the nested fan-outs opened
//!    in it run in branch order, one after the other: the rest of their
//!    starts ([`Runtime::nested_starts`] first), their rounds, their join
//!    ([`Runtime::join_in_branch`]), whose agent's turn is the outer
//!    branch's next, run in the outer fan-out's next round.
//!
//! Records are committed in that order whatever order the bodies finish in:
//! the chain stays linear, and resume and replay see the same order.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::run::fork::{BranchState, BranchTurn, ForkRun, Handing};
use crate::run::{Runtime, Status};
use crate::spec::{Agent, Fork, Lineage, Node, RunError, Workflow, agent_name};

impl<'x, W: Workflow> Runtime<'x, W> {
    /// Opens `inner`, the fan-out a turn of a branch of `fork` hands off to
    /// (`handing`, from [`finish`](Self::finish)), and records its first
    /// branch's start (`input`, to `B`) with that turn's record: the one
    /// record of the turn's settle. The rest of its starts are recorded once
    /// the round is settled ([`nested_starts`](Self::nested_starts)).
    #[doc(hidden)] // for generated fork turns and hand-written workflows
    pub fn fan_out_in_branch<B: Agent<W>>(
        &mut self,
        fork: &mut ForkRun,
        handing: Handing,
        inner: &'static Fork,
        input: B::Input,
    ) -> Result<(ForkRun, BranchTurn<'x, W, B>), RunError>
    where
        B::Input: Serialize,
    {
        let (branch, start, depth) = handing.place();
        let mut run = self.open_inner(fork, inner, branch, depth, start)?;
        run.open = handing.open;
        run.dissent = handing.dissent;
        let mut record = handing.record;
        // Run again after a crash cut its fan-out's starts: its usage and
        // its record are the recorded ones, counted and kept once.
        if let Some(spent) = run.resume.as_ref().and_then(|r| r.spent) {
            self.spent = spent;
            run.spent = spent;
            record = None;
        }
        let first = self.branch_with::<B>(&mut run, 0, input, record)?;
        Ok((run, first))
    }

    /// A resumed nested fan-out whose starts are all recorded, the first at
    /// `seq` (what turn `depth` of branch `branch` of `fork` handed on): it
    /// is opened again, its first branch's turn read back from its start.
    /// The other branches' inputs are read back with
    /// [`recorded_input`](Self::recorded_input).
    #[doc(hidden)] // for generated fork turns and hand-written workflows
    pub fn fan_out_recorded<B: Agent<W>>(
        &mut self,
        fork: &mut ForkRun,
        branch: u16,
        depth: u16,
        seq: u32,
        inner: &'static Fork,
    ) -> Result<(ForkRun, BranchTurn<'x, W, B>), RunError>
    where
        B::Input: Serialize + DeserializeOwned,
    {
        let at = self.head_of(fork, branch)?;
        let run = self.open_inner(fork, inner, branch, depth, at)?;
        self.first_recorded::<B>(run, seq, at)
    }

    /// The first branch's turn of resumed nested fan-out `run` (opened
    /// again over fan-out `#at`), read back from its start, which must be
    /// record `seq`.
    fn first_recorded<B: Agent<W>>(
        &mut self,
        mut run: ForkRun,
        seq: u32,
        at: u32,
    ) -> Result<(ForkRun, BranchTurn<'x, W, B>), RunError>
    where
        B::Input: Serialize + DeserializeOwned,
    {
        let first = run.resume.as_ref().and_then(|r| r.starts.first());
        if first.map(|(s, _)| *s) != Some(seq) {
            return Err(RunError::Resume(format!(
                "run {}: record #{seq} is not the first start of the fan-out of #{at}",
                self.transcript.run_id
            )));
        }
        let input = self.recorded_input::<B>(&run, 0)?;
        let first = self.branch::<B>(&mut run, 0, input)?;
        Ok((run, first))
    }

    /// The input recorded for branch `branch` of resumed fan-out `fork`,
    /// read back from its start.
    #[doc(hidden)] // for generated fork turns and hand-written workflows
    pub fn recorded_input<B: Agent<W>>(
        &self,
        fork: &ForkRun,
        branch: u16,
    ) -> Result<B::Input, RunError>
    where
        B::Input: DeserializeOwned,
    {
        let start = fork
            .resume
            .as_ref()
            .and_then(|r| r.starts.get(usize::from(branch)))
            .map(|(seq, _)| *seq);
        let Some(seq) = start else {
            return Err(RunError::Resume(format!(
                "run {}: branch {branch} of the fan-out of #{} has no recorded start",
                self.transcript.run_id,
                fork.at()
            )));
        };
        let Some(entry) = self.transcript.entries.get(seq as usize) else {
            return Err(RunError::Protocol(format!(
                "record #{seq} is not in the transcript"
            )));
        };
        let bytes = self
            .transcript
            .payload_bytes(seq as usize)
            .unwrap_or_default();
        crate::encode::decode(entry.format, bytes)
            .map_err(|error| RunError::Unreadable { seq, error })
    }

    /// Opens map fan-out `inner` (`map(worker, max = N)`, its one branch's
    /// agent `B`), to which a turn of a branch of `fork` hands `items`
    /// (`handing`, from [`finish`](Self::finish)), and records its first
    /// item's start with that turn's record: the one record of the turn's
    /// settle. The other items are returned, their starts recorded once the
    /// round is settled ([`nested_starts`](Self::nested_starts)). An empty
    /// list starts nothing: the caller records the join at once
    /// ([`join_in_branch`](Self::join_in_branch)), the turn's one record.
    #[doc(hidden)] // for generated fork turns and hand-written workflows
    #[allow(clippy::type_complexity)]
    pub fn fan_out_map_in_branch<B: Agent<W>>(
        &mut self,
        fork: &mut ForkRun,
        handing: Handing,
        inner: &'static Fork,
        max: u32,
        items: Vec<B::Input>,
    ) -> Result<(ForkRun, Option<BranchTurn<'x, W, B>>, Vec<B::Input>), RunError>
    where
        B::Input: Serialize,
    {
        if items.len() > max as usize || items.len() > usize::from(u16::MAX) {
            return Err(RunError::Protocol(format!(
                "agent `{}` mapped {} items, over its bound of {max}",
                agent_name::<W>(inner.from),
                items.len()
            )));
        }
        let (branch, start, depth) = handing.place();
        let place = (branch, depth, start);
        let mut run = self.open_inner_sized(fork, inner, place, Some(items.len()))?;
        run.open = handing.open;
        run.dissent = handing.dissent;
        let mut record = handing.record;
        if let Some(spent) = run.resume.as_ref().and_then(|r| r.spent) {
            self.spent = spent;
            run.spent = spent;
            record = None;
        }
        let mut items = items.into_iter();
        let Some(first) = items.next() else {
            // The join is the turn's one record, written where it settles,
            // with the turn's record.
            run.round_base = self.transcript.len() as u32;
            run.keep = record;
            return Ok((run, None, Vec::new()));
        };
        let first = self.branch_with::<B>(&mut run, 0, first, record)?;
        Ok((run, Some(first), items.collect()))
    }

    /// A resumed map inside a branch whose join is recorded (every item's
    /// start with it): opened again from its records, its first item's turn
    /// read back from its start at `seq` (what turn `depth` of branch
    /// `branch` of `fork` handed on). The other items' inputs are read back
    /// with [`recorded_input`](Self::recorded_input), `1..branches()`.
    #[doc(hidden)] // for generated fork turns and hand-written workflows
    pub fn map_recorded<B: Agent<W>>(
        &mut self,
        fork: &mut ForkRun,
        branch: u16,
        depth: u16,
        seq: u32,
        inner: &'static Fork,
    ) -> Result<(ForkRun, BranchTurn<'x, W, B>), RunError>
    where
        B::Input: Serialize + DeserializeOwned,
    {
        let at = self.head_of(fork, branch)?;
        let items = fork
            .resume
            .as_ref()
            .and_then(|r| r.nested.iter().find(|n| n.at == at))
            .map_or(0, |n| n.starts.len());
        let run = self.open_inner_sized(fork, inner, (branch, depth, at), Some(items))?;
        self.first_recorded::<B>(run, seq, at)
    }

    /// A resumed map inside a branch that was handed no item: its join,
    /// recorded at `seq` (what turn `depth` of branch `branch` of `fork`
    /// handed on), read back by [`join_in_branch`](Self::join_in_branch).
    #[doc(hidden)] // for generated fork turns and hand-written workflows
    pub fn empty_map_recorded(
        &mut self,
        fork: &mut ForkRun,
        branch: u16,
        depth: u16,
        seq: u32,
        inner: &'static Fork,
    ) -> Result<ForkRun, RunError> {
        let at = self.head_of(fork, branch)?;
        let mut run = self.open_inner_sized(fork, inner, (branch, depth, at), Some(0))?;
        if run
            .resume
            .as_ref()
            .and_then(|r| r.join.as_ref())
            .map(|j| j.0)
            != Some(seq)
        {
            return Err(RunError::Resume(format!(
                "run {}: record #{seq} is not the join of the fan-out of #{at}",
                self.transcript.run_id
            )));
        }
        run.round_base = seq;
        Ok(run)
    }

    /// The last record of branch `branch` of `fork`.
    fn head_of(&self, fork: &ForkRun, branch: u16) -> Result<u32, RunError> {
        fork.heads.get(usize::from(branch)).copied().ok_or_else(|| {
            RunError::Protocol(format!(
                "branch {branch} of the fan-out of #{} is not one of its branches",
                fork.at()
            ))
        })
    }

    /// Before the rest of nested fan-out `inner`'s starts (its first
    /// recorded at its agent's settle): its starts take the next records of
    /// `fork`'s rounds, its own rounds those after them.
    #[doc(hidden)] // for generated fork turns and hand-written workflows
    pub fn nested_starts(&mut self, fork: &ForkRun, inner: &mut ForkRun) {
        let rest = (inner.heads.len() as u32).saturating_sub(1);
        inner.round_base = fork.round_base.saturating_add(rest);
    }

    /// Records nested fan-out `inner`'s join: `joined` (every branch's
    /// outcome, in branch order) to the join agent `J`, a turn of the outer
    /// branch the fan-out is in, with `J`'s receipt; `J`'s turn runs in
    /// `fork`'s next round. A refusal ends the outer branch
    /// ([`Branch::Rejected`](crate::spec::Branch), from
    /// [`finish`](Self::finish) on the returned turn). Resumed, a recorded
    /// join is read back (it must be what `joined` is), never recorded
    /// twice.
    #[doc(hidden)] // for generated fork turns and hand-written workflows
    pub fn join_in_branch<J: Agent<W>>(
        &mut self,
        fork: &mut ForkRun,
        inner: ForkRun,
        joined: J::Input,
    ) -> Result<BranchTurn<'x, W, J>, RunError>
    where
        J::Input: Serialize,
    {
        let run_id = self.transcript.run_id;
        let Some((branch, depth)) = inner.outer else {
            return Err(RunError::Protocol(
                "a fan-out that is not inside a branch was joined as one".into(),
            ));
        };
        let edge = inner.fork.join;
        let info = self.edge(edge, Node::End, false)?;
        if info.to != Node::Agent(J::INDEX) || info.from != Node::Agent(inner.fork.from) {
            return Err(RunError::Protocol(format!(
                "the join of the fan-out of `{}` does not lead to agent `{}`",
                agent_name::<W>(inner.fork.from),
                agent_name::<W>(J::INDEX)
            )));
        }
        let at = inner.round_base;
        // The disagreement among the branches' verdicts: what the join's
        // turn hands on must carry it forward.
        self.note_verdicts::<J>(inner.fork, inner.at, &inner.heads, &joined);
        let dissent = self.joined_dissent.take();
        self.joined_open = inner.carried;
        let mut turn = BranchTurn::new(branch, at, None);
        turn.depth = depth.saturating_add(1);
        turn.dissent = dissent.map(|d| *d);
        let recorded = inner.resume.as_ref().and_then(|r| r.join.clone());
        if let Some((seq, anchor)) = recorded {
            let mut bytes = Vec::new();
            let same = seq == at
                && crate::encode::encode(&mut bytes, &joined).is_ok()
                && self.transcript.payload_bytes(seq as usize) == Some(&bytes[..]);
            if !same {
                return Err(RunError::Resume(format!(
                    "run {run_id}: the join of the fan-out of #{} (#{seq}) is not what its branches' recorded outcomes join",
                    inner.at
                )));
            }
            if let Some(head) = fork.heads.get_mut(usize::from(branch)) {
                *head = seq;
            }
            fork.round_base = fork.round_base.max(seq.saturating_add(1));
            if let Some(reason) = self.recorded_refusal(branch, seq, "join")? {
                turn.state = BranchState::Refused(reason);
                self.joined_open.clear();
                return Ok(turn);
            }
            let scope = J::contract(&joined).map(|c| (c.authority, c.expires));
            turn.scope = scope;
            return self.resume_turn(fork, turn, joined, scope, anchor);
        }
        if self.transcript.len() as u32 != at {
            return Err(RunError::Protocol(format!(
                "the join of the fan-out of #{} was to be record #{at}, and the run has {} records",
                inner.at,
                self.transcript.len()
            )));
        }
        self.turn.scope = inner.scope;
        self.turn_input = inner.at as usize;
        let refused = self.record(edge, info, &joined, Status::Pending)?;
        // An empty map's join: the record of the turn that mapped.
        self.keep_turn(at, inner.keep);
        self.transcript.lineage.push((
            at,
            Lineage::Join {
                fork: inner.at,
                heads: inner.heads.clone(),
            },
        ));
        if let Some(head) = fork.heads.get_mut(usize::from(branch)) {
            *head = at;
        }
        fork.round_base = fork.round_base.max(at.saturating_add(1));
        self.open = Vec::new();
        self.receive_in_branch(fork, &mut turn, joined, refused.into_iter().collect())?;
        if !turn.accepted() {
            self.joined_open.clear();
        }
        Ok(turn)
    }

    /// Opens fan-out `inner` after turn `depth` of branch `branch` of
    /// `fork`, which worked on record `at`: its branches run in rounds,
    /// and a resumed one takes the records `fork`'s resume holds for it.
    fn open_inner(
        &mut self,
        fork: &mut ForkRun,
        inner: &'static Fork,
        branch: u16,
        depth: u16,
        at: u32,
    ) -> Result<ForkRun, RunError> {
        self.open_inner_sized(fork, inner, (branch, depth, at), None)
    }

    /// [`open_inner`](Self::open_inner), for a map (`items`: its number of
    /// items, one branch each).
    fn open_inner_sized(
        &mut self,
        fork: &mut ForkRun,
        inner: &'static Fork,
        (branch, depth, at): (u16, u16, u32),
        items: Option<usize>,
    ) -> Result<ForkRun, RunError> {
        self.turn_input = at as usize;
        let (branches, map) = match items {
            Some(n) => (n, true),
            None => (inner.branches.len(), false),
        };
        let mut run = self.open_fork(inner, branches, map)?;
        run.deferred = true;
        // Numbered once its starts are recorded (`nested_starts`).
        run.next_outcome = 0;
        run.round_base = 0;
        run.outer = Some((branch, depth));
        run.open = Vec::new();
        run.dissent = None;
        run.resume = fork.resume.as_mut().and_then(|r| {
            let i = r.nested.iter().position(|n| n.at == at)?;
            Some(r.nested.swap_remove(i))
        });
        Ok(run)
    }
}
