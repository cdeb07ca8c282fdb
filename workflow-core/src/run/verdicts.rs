//! Verdicts at a join: when the branches of a fan-out ended `Done` with
//! different verdicts, the join agent's outgoing handoff must carry the
//! disagreement forward (see `spec/verdict.rs` for the rule). The run
//! decides it from the branches' recorded outcomes when it records the join,
//! before the join agent's body runs, and checks the join's handoff against
//! it; the join agent's word is never taken for it.

use crate::run::Runtime;
use crate::spec::{Agent, BranchVerdict, Citation, ContractView, Disagreement, Node};
use crate::spec::{RejectReason, Workflow, agent_name};

/// The index of the agent named `name` (`u16::MAX` for none).
fn agent_index<W: Workflow>(name: &str) -> u16 {
    (0..W::GRAPH.agents.len() as u16)
        .find(|&a| agent_name::<W>(a) == name)
        .unwrap_or(u16::MAX)
}

impl<W: Workflow> Runtime<'_, W> {
    /// The disagreement among the branches of the fan-out recorded at
    /// `fork` (the join's input `joined`, every branch's last record in
    /// `heads`, in the fan-out's branch order), kept for the join's turn.
    pub(super) fn note_verdicts<J: Agent<W>>(
        &mut self,
        fork: &crate::spec::Fork,
        at: u32,
        heads: &[u32],
        joined: &J::Input,
    ) {
        self.note_branch_verdicts(fork, at, heads, J::verdicts(joined));
    }

    /// [`note_verdicts`](Self::note_verdicts) with the verdicts read.
    fn note_branch_verdicts(
        &mut self,
        fork: &crate::spec::Fork,
        at: u32,
        heads: &[u32],
        mut verdicts: Vec<BranchVerdict>,
    ) {
        // Each verdict's branch, by its agent's name: its place in the
        // fan-out and its outcome record (the branch's head).
        let place = |v: &BranchVerdict| {
            // A map's item `k`: the fan-out's `k`th branch.
            if let Some(k) = v.item.map(usize::from) {
                return (k < heads.len()).then_some(k);
            }
            let name = &*v.branch;
            fork.branches.iter().zip(heads).position(|(b, _)| {
                W::GRAPH.edges.get(b.start as usize).map(|e| e.to)
                    == Some(Node::Agent(agent_index::<W>(name)))
            })
        };
        verdicts.sort_by_key(|v| place(v).unwrap_or(usize::MAX));
        for v in &mut verdicts {
            v.record = place(v)
                .and_then(|i| heads.get(i).copied())
                .and_then(|seq| {
                    let text = self.transcript.payload(seq as usize).ok()?;
                    Some(Citation::record(seq, crate::encode::digest(&text)))
                });
        }
        self.joined_dissent = Disagreement::among(at, verdicts).map(Box::new);
    }

    /// A run resumed on record `seq`, about to run the turn `state`: when
    /// `seq` is a join's record, the disagreement among its branches'
    /// verdicts, as the run that recorded the join noted it.
    pub(crate) fn resumed_at_join(&mut self, seq: usize, state: &W::State) {
        let Some(crate::spec::Lineage::Join { fork: at, heads }) =
            self.transcript.lineage(seq).cloned()
        else {
            return;
        };
        // The fan-out: the one whose agent received record `at`.
        let from = self
            .transcript
            .entries
            .get(at as usize)
            .and_then(|e| W::GRAPH.edges.get(e.edge as usize))
            .map(|e| e.to);
        let Some(info) = W::FORKS
            .iter()
            .find(|f| from == Some(Node::Agent(f.fork.from)))
        else {
            return;
        };
        self.note_branch_verdicts(info.fork, at, &heads, W::state_verdicts(state));
    }

    /// At the start of a turn: the disagreement the turn must carry
    /// forward (a join's turn, after [`note_verdicts`](Self::note_verdicts)),
    /// told to its context.
    #[inline]
    pub(super) fn begin_verdicts(&mut self) {
        // Nearly always nothing to move: no join's disagreement, none left.
        if self.joined_dissent.is_none() && self.dissent.is_none() {
            return;
        }
        self.dissent = self.joined_dissent.take();
        if let Some(d) = &self.dissent {
            self.shared.lock().disagreement = Some(Disagreement::clone(d));
            self.shared.mark();
        }
    }

    /// The turn's handoff `contract` drops the disagreement the turn
    /// received: the reason to reject it. A run's output that is not a
    /// handoff (`end` with no contract) cannot carry it: its question goes
    /// to the caller with the output, recorded as unresolved on the turn,
    /// as an open question's does.
    pub(super) fn dropped_verdict(
        &mut self,
        contract: Option<&ContractView<'_>>,
        to_end: bool,
    ) -> Option<RejectReason> {
        self.dissent.as_ref()?;
        let dissent = self.dissent.take()?;
        if contract.is_none() && to_end {
            self.open.push(dissent.question());
            return None;
        }
        if dissent.carried_by(contract) {
            return None;
        }
        // Kept for the join's next attempt, if its handoff is returned to it.
        let verdicts: Vec<BranchVerdict> = dissent.verdicts.clone();
        let fork = dissent.fork;
        self.joined_dissent = Some(dissent);
        Some(RejectReason::VerdictDropped { fork, verdicts })
    }
}
