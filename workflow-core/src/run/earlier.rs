//! An agent's own earlier turns in this run, read from the record: what it
//! received and what it handed on each time, so that a turn that runs again
//! (returned to, or around a bounded loop) can see what it did before.

use std::marker::PhantomData;

use crate::run::transcript::{Entry, ScopeAt};
use crate::run::{PayloadsRef, Runtime, Transcript};
use crate::spec::{Agent, Node, PayloadFormat, RecordError, Workflow};

/// One earlier turn of agent `A` in this run, as the record holds it: the
/// input it worked on and the transfer it made. Decoded on request, typed
/// by the agent's own input and by the receiver of the transfer.
///
/// Built from the record, so a resumed run and a replay see the same turns
/// as the run that made them.
pub struct EarlierTurn<W, A> {
    input_seq: usize,
    input: (PayloadFormat, Vec<u8>),
    output_seq: usize,
    to: Node,
    output: (PayloadFormat, Vec<u8>),
    _of: PhantomData<fn() -> (W, A)>,
}

impl<W: Workflow, A: Agent<W>> EarlierTurn<W, A> {
    /// The sequence number of the record of the input the turn worked on.
    pub fn input_seq(&self) -> usize {
        self.input_seq
    }

    /// The sequence number of the record of the transfer the turn made.
    pub fn output_seq(&self) -> usize {
        self.output_seq
    }

    /// The input the turn worked on.
    pub fn input(&self) -> Result<A::Input, RecordError>
    where
        A::Input: serde::de::DeserializeOwned,
    {
        decode(self.input_seq, &self.input)
    }

    /// The receiver of the turn's transfer: an agent's name, or `"END"`.
    pub fn receiver(&self) -> &'static str {
        W::GRAPH.node_name(self.to)
    }

    /// The turn's handoff, when it went to agent `B` (its marker,
    /// `B::Agent`), as `B`'s input; `None` when it went elsewhere.
    pub fn output_to<B: Agent<W>>(&self) -> Option<Result<B::Input, RecordError>>
    where
        B::Input: serde::de::DeserializeOwned,
    {
        (self.to == Node::Agent(B::INDEX)).then(|| decode(self.output_seq, &self.output))
    }

    /// The run's output, when the turn ended the run with it (a turn runs
    /// again after its output was rejected at the end, for example).
    pub fn output_end(&self) -> Option<Result<W::Output, RecordError>> {
        (self.to == Node::End).then(|| decode(self.output_seq, &self.output))
    }

    /// The turn's transfer as JSON, whatever its receiver.
    pub fn output_json(&self) -> Result<serde_json::Value, RecordError> {
        decode(self.output_seq, &self.output)
    }
}

impl<W, A> std::fmt::Debug for EarlierTurn<W, A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EarlierTurn")
            .field("input_seq", &self.input_seq)
            .field("output_seq", &self.output_seq)
            .field("to", &self.to)
            .finish_non_exhaustive()
    }
}

fn decode<T: serde::de::DeserializeOwned>(
    seq: usize,
    (format, bytes): &(PayloadFormat, Vec<u8>),
) -> Result<T, RecordError> {
    crate::encode::decode(*format, bytes).map_err(|error| RecordError::Undecodable {
        seq,
        error: error.to_string(),
    })
}

/// No such number, in an [`Entry`](crate::run::transcript::Entry)'s
/// `turn_input` or `under`.
pub(crate) const NONE: u32 = u32::MAX;

/// `expires` as a kind and a value, for the run's per-transfer tables (an
/// `Option<Expiry>` takes 16 bytes with its own tag and padding): kind 0
/// none, 1 never, 2 at a hop, 3 at a time.
pub(crate) fn pack_expiry(expires: Option<crate::spec::Expiry>) -> (u8, u64) {
    use crate::spec::Expiry;
    match expires {
        None => (0, 0),
        Some(Expiry::Never) => (1, 0),
        Some(Expiry::AtHop(hop)) => (2, u64::from(hop)),
        Some(Expiry::AtUnixMs(ms)) => (3, ms),
    }
}

/// The expiry [`pack_expiry`] packed.
pub(crate) fn unpack_expiry(kind: u8, value: u64) -> Option<crate::spec::Expiry> {
    use crate::spec::Expiry;
    match kind {
        1 => Some(Expiry::Never),
        2 => Some(Expiry::AtHop(value as u32)),
        3 => Some(Expiry::AtUnixMs(value)),
        _ => None,
    }
}

/// The run's transfers as its earlier turns and its lease chains are read
/// from: the transcript's entries (each with the agent turn that made it
/// and the lease it was sent under) and its senders' scopes. Borrowed from
/// the transcript by the runtime and by a turn's context (which borrows
/// the run's state for its turn), or from the run's [`SharedTransfers`] by
/// a fan-out branch's context.
#[derive(Clone, Copy)]
pub(crate) struct Transfers<'a> {
    entries: &'a [Entry],
    scopes: &'a [ScopeAt],
}

impl Transcript {
    /// Its transfers, to read earlier turns and lease chains from.
    #[inline]
    pub(crate) fn transfers(&self) -> Transfers<'_> {
        Transfers {
            entries: &self.entries,
            scopes: &self.sender_scopes,
        }
    }

    /// Links every transfer to the agent turn that made it and to the
    /// lease it was sent under, as the run that recorded them did (a
    /// resumed run does it once, from its records): each transfer an agent
    /// made (a person's edit of one is not a turn of its own) with the last
    /// input that agent accepted before it. Returns the turns linked.
    pub(crate) fn link_turns(&mut self) -> u32 {
        let mut input: Vec<Option<usize>> = vec![None; self.graph.agents.len()];
        let mut turns = 0;
        for i in 0..self.entries.len() {
            let e = self.entries[i];
            let edge = self.graph.edges.get(e.edge as usize);
            let turn = match edge.map(|edge| edge.from) {
                Some(Node::Agent(from)) if !e.redelivery => {
                    input.get(from as usize).copied().flatten()
                }
                _ => None,
            };
            self.link(i, turn);
            turns += u32::from(turn.is_some());
            if let Some(Node::Agent(to)) = edge.map(|edge| edge.to)
                && e.status.ran()
                && let Some(slot) = input.get_mut(to as usize)
            {
                *slot = Some(i);
            }
        }
        turns
    }

    /// Links transfer `i` to the agent turn that made it (`turn`, that
    /// turn's input) and to the lease it was sent under: the turn's input,
    /// or for a redelivery the lease of the transfer it repeats (the last
    /// one between the same two nodes).
    pub(crate) fn link(&mut self, i: usize, turn: Option<usize>) {
        let Some(e) = self.entries.get(i) else {
            return;
        };
        let link = if e.redelivery {
            let ends = |e: &Entry| {
                self.graph
                    .edges
                    .get(e.edge as usize)
                    .map(|d| (d.from, d.to))
            };
            let these = ends(e);
            self.entries[..i]
                .iter()
                .rev()
                .find(|earlier| ends(earlier) == these)
                .and_then(Entry::under)
        } else {
            turn.map(|input| input as u32)
        };
        self.entries[i].link = link.unwrap_or(NONE);
    }
}

impl Transfers<'_> {
    /// The lease transfer `seq` was granted under (its sender's input),
    /// if its sender was an agent working on one.
    pub(crate) fn granted_under(&self, seq: u32) -> Option<u32> {
        self.entries.get(seq as usize)?.under()
    }

    /// When the scope the sender of transfer `seq` worked under expired
    /// (`None`: no scope, or no such transfer).
    pub(crate) fn sender_expires(&self, seq: u32) -> Option<crate::spec::Expiry> {
        crate::run::transcript::scope_at(self.scopes, seq as usize).map(|(_, expires)| expires)
    }

    /// Who sent transfer `seq` (an agent, or `None` for the run's caller)
    /// and to whom, in `graph` (`None`: no such transfer).
    pub(crate) fn ends(&self, graph: &crate::spec::Graph, seq: u32) -> Option<(Option<u16>, Node)> {
        let e = self.entries.get(seq as usize)?;
        Some(match graph.edges.get(e.edge as usize) {
            Some(edge) => (
                match edge.from {
                    Node::Agent(a) => Some(a),
                    _ => None,
                },
                edge.to,
            ),
            None => (None, Node::End),
        })
    }

    /// The leases transfer `seq`'s lease derives from, itself first: each
    /// one the lease its granting turn worked under, back to the run's
    /// input.
    pub(crate) fn lease_chain(&self, seq: u32) -> Vec<u32> {
        let mut chain = vec![seq];
        let mut at = seq;
        // Each step goes to an earlier transfer: the walk ends.
        while let Some(under) = self.granted_under(at).filter(|u| *u < at) {
            chain.push(under);
            at = under;
        }
        chain
    }

    /// Agent `A`'s turns among the first `upto` agent turns recorded,
    /// typed, their payloads read from `bytes` (the run's, as they stood
    /// when the turn asking started).
    pub(crate) fn turns_of<W: Workflow, A: Agent<W>>(
        &self,
        upto: u32,
        bytes: PayloadsRef<'_>,
    ) -> Vec<EarlierTurn<W, A>> {
        let copy = |e: &Entry| {
            (
                e.format,
                bytes.get(e.start, e.end).unwrap_or_default().to_vec(),
            )
        };
        let mut seen = 0;
        let mut turns = Vec::new();
        for (seq, e) in self.entries.iter().enumerate() {
            let Some(turn_input) = e.turn_input() else {
                continue;
            };
            if seen == upto {
                break;
            }
            seen += 1;
            let Some(edge) = W::GRAPH.edges.get(e.edge as usize) else {
                continue;
            };
            if edge.from == Node::Agent(A::INDEX)
                && let Some(input) = self.entries.get(turn_input as usize)
            {
                turns.push(EarlierTurn {
                    input_seq: turn_input as usize,
                    input: copy(input),
                    output_seq: seq,
                    to: edge.to,
                    output: copy(e),
                    _of: PhantomData,
                });
            }
        }
        turns
    }
}

/// The run's transfers as a fan-out's branches read them (their contexts
/// are kept while the runtime records their siblings, so they cannot
/// borrow the transcript): a copy of the transcript's entries and senders'
/// scopes, shared through the run's shared state and brought up to date
/// when a branch's context is made. A run that never fans out never
/// copies anything into it.
#[derive(Default)]
pub(crate) struct SharedTransfers {
    entries: Vec<Entry>,
    scopes: Vec<ScopeAt>,
}

impl SharedTransfers {
    /// Copies what `t` recorded since the last time. Entries and scopes
    /// are appended in order, and what a context reads of an entry (who
    /// made it, under what lease, its payload's span) never changes once
    /// it is recorded, so the copy's first entries stay exact.
    ///
    /// The copy reserves what the transcript has reserved, so it grows when
    /// the transcript grows (by half), not doubling from nothing a record
    /// at a time.
    pub(crate) fn catch_up(&mut self, t: &Transcript) {
        copy_new(&mut self.entries, &t.entries);
        copy_new(&mut self.scopes, &t.sender_scopes);
    }

    /// What it holds, to read.
    pub(crate) fn view(&self) -> Transfers<'_> {
        Transfers {
            entries: &self.entries,
            scopes: &self.scopes,
        }
    }
}

/// Appends to `copy` what `from` holds past its length, reserving what
/// `from` has reserved.
fn copy_new<T: Copy>(copy: &mut Vec<T>, from: &Vec<T>) {
    let Some(new) = from.get(copy.len()..) else {
        return;
    };
    if copy.capacity() < from.len() {
        copy.reserve_exact(from.capacity() - copy.len());
    }
    copy.extend_from_slice(new);
}

impl<W: Workflow> Runtime<'_, W> {
    /// How many recorded agent turns agent `A`'s context may see: 0 when
    /// `A` has made no transfer yet (counted as the record grows, so a
    /// first turn costs nothing here).
    pub(crate) fn earlier_upto<A: Agent<W>>(&self) -> u32 {
        if self.sent_by.get(A::INDEX as usize).is_none_or(|n| *n == 0) {
            return 0;
        }
        self.linked_turns
    }

    /// Links the transfer just recorded (the transcript's last entry, sent
    /// by `from` and not a redelivery) to the agent turn that made it, when
    /// an agent sent it.
    #[inline]
    pub(crate) fn link_sent(&mut self, from: Node) {
        let i = self.transcript.entries.len() - 1;
        let turn = match from {
            Node::Agent(agent) => self.input_of(agent, i),
            _ => None,
        };
        if let Some(input) = turn {
            self.transcript.entries[i].link = input as u32;
            self.linked_turns += 1;
        }
        self.keep_branches_current();
    }

    /// Brings the branches' copy of the run's transfers up to date with
    /// what was just recorded, while a fan-out branch may read it (a
    /// branch's shared state holds it): a branch reads every record made
    /// before it asks, as a turn that borrows the transcript does, its
    /// siblings' included. Otherwise (every sequential turn) one load.
    #[inline]
    pub(crate) fn keep_branches_current(&self) {
        if self.shared.copy_is_shared() {
            self.catch_up_branches();
        }
    }

    /// [`keep_branches_current`](Self::keep_branches_current)'s copy, out
    /// of the line of a sequential run's records.
    #[cold]
    #[inline(never)]
    fn catch_up_branches(&self) {
        self.shared.transfers().catch_up(&self.transcript);
    }

    /// The last input agent `agent` accepted before transfer `before`: the
    /// current turn's input when it is one (always, for turns the executor
    /// runs), else found by looking back.
    fn input_of(&self, agent: u16, before: usize) -> Option<usize> {
        let t = &self.transcript;
        // The run's graph is `W::GRAPH` (the transcript's own, read as the
        // constant it is: no pointer loaded at every transfer).
        let to_agent_ran = |i: usize| {
            t.entries.get(i).is_some_and(|e| {
                e.status.ran()
                    && W::GRAPH.edges.get(e.edge as usize).map(|edge| edge.to)
                        == Some(Node::Agent(agent))
            })
        };
        if self.turn_input < before && to_agent_ran(self.turn_input) {
            return Some(self.turn_input);
        }
        (0..before).rev().find(|i| to_agent_ran(*i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::transcript::Status;
    use crate::spec::{AgentInfo, EdgeInfo, Expiry, Graph};

    fn unit() -> std::borrow::Cow<'static, str> {
        "()".into()
    }
    const fn agent(name: &'static str) -> AgentInfo {
        AgentInfo {
            name,
            input: "()",
            input_schema: unit,
            owns: &[],
            tools: &[],
            timeout_ms: None,
            pre: &[],
            post: &[],
            on_reject: crate::spec::OnReject::Abort,
        }
    }
    const fn edge(from: Node, to: Node) -> EdgeInfo {
        EdgeInfo {
            from,
            to,
            payload: "()",
            payload_schema: unit,
            bound: None,
        }
    }
    static AGENTS: [AgentInfo; 2] = [agent("a"), agent("b")];
    static EDGES: [EdgeInfo; 3] = [
        edge(Node::Start, Node::Agent(0)),
        edge(Node::Agent(0), Node::Agent(1)),
        edge(Node::Agent(1), Node::Agent(0)),
    ];
    static GRAPH: Graph = Graph {
        name: "links",
        agents: &AGENTS,
        edges: &EDGES,
        tools: &[],
        input: "()",
        output: "()",
        max_hops: 10,
    };

    fn push(t: &mut Transcript, edge: u16, redelivery: bool, expires: Option<Expiry>) {
        let at = t.entries.len() as u32;
        if let Some(expires) = expires {
            t.push_sender_scope(at, "deploy", expires);
        }
        t.entries.push(Entry {
            hop: 0,
            edge,
            status: Status::Accepted,
            redelivery,
            format: PayloadFormat::Msgpack,
            start: 0,
            end: 0,
            link: NONE,
            at_us: 0,
        });
    }

    #[test]
    fn transfers_read_back_who_made_them_and_under_what_lease() {
        // The scopes are packed (an `Option<Expiry>` alone takes 16
        // bytes), and an entry with its link stays 32 bytes.
        assert_eq!(std::mem::size_of::<ScopeAt>(), 32);
        assert_eq!(std::mem::size_of::<Entry>(), 32);
        for expires in [
            None,
            Some(Expiry::Never),
            Some(Expiry::AtHop(u32::MAX)),
            Some(Expiry::AtUnixMs(u64::MAX)),
        ] {
            let (kind, value) = pack_expiry(expires);
            assert_eq!(unpack_expiry(kind, value), expires);
        }
        let mut t = Transcript::new(1, &GRAPH);
        // 0: the run's input to a; 1: a -> b; 2: b -> a; 3: a -> b;
        // 4: a -> b again (a redelivery of 3).
        push(&mut t, 0, false, None);
        push(&mut t, 1, false, Some(Expiry::AtHop(7)));
        push(&mut t, 2, false, Some(Expiry::AtUnixMs(1_700_000_000_000)));
        push(&mut t, 1, false, Some(Expiry::Never));
        push(&mut t, 1, true, Some(Expiry::Never));
        assert_eq!(t.link_turns(), 3);
        let x = t.transfers();
        assert_eq!(x.sender_expires(0), None);
        assert_eq!(x.sender_expires(1), Some(Expiry::AtHop(7)));
        assert_eq!(
            x.sender_expires(2),
            Some(Expiry::AtUnixMs(1_700_000_000_000))
        );
        assert_eq!(x.ends(&GRAPH, 0), Some((None, Node::Agent(0))));
        assert_eq!(x.ends(&GRAPH, 2), Some((Some(1), Node::Agent(0))));
        assert_eq!(x.ends(&GRAPH, 5), None);
        assert_eq!(x.granted_under(0), None);
        assert_eq!(x.granted_under(1), Some(0));
        assert_eq!(x.granted_under(3), Some(2));
        // A redelivery is sent under the lease of the transfer it repeats.
        assert_eq!(x.granted_under(4), Some(2));
        assert_eq!(x.lease_chain(3), [3, 2, 1, 0]);
        assert_eq!(x.lease_chain(4), [4, 2, 1, 0]);
        // The branches' copy, caught up in two steps, reads the same.
        let mut shared = SharedTransfers::default();
        let mut first = t.clone();
        first.entries.truncate(2);
        first.sender_scopes.truncate(1);
        shared.catch_up(&first);
        assert_eq!(shared.view().lease_chain(1), [1, 0]);
        shared.catch_up(&t);
        assert_eq!(shared.view().lease_chain(4), [4, 2, 1, 0]);
        assert_eq!(shared.view().sender_expires(2), x.sender_expires(2));
    }

    #[test]
    fn the_copy_grows_with_the_transcript_not_a_record_at_a_time() {
        let mut t = Transcript::new(1, &GRAPH);
        let mut shared = SharedTransfers::default();
        let mut growths = 0;
        let mut capacity = 0;
        for i in 0..200 {
            push(&mut t, 1 + (i % 2), false, Some(Expiry::Never));
            shared.catch_up(&t);
            if shared.entries.capacity() != capacity {
                growths += 1;
                capacity = shared.entries.capacity();
            }
            // What the transcript reserved, no more and no less.
            assert_eq!(shared.entries.capacity(), t.entries.capacity());
            assert_eq!(shared.scopes.capacity(), t.sender_scopes.capacity());
        }
        assert_eq!(shared.entries.len(), 200);
        assert_eq!(shared.scopes.len(), 200);
        // As often as the transcript grew (by half), not once a record.
        assert!(growths <= 12, "{growths} growths");
    }
}
