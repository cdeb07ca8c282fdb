//! An agent's own earlier turns in this run, read from the record: what it
//! received and what it handed on each time, so that a turn that runs again
//! (returned to, or around a bounded loop) can see what it did before.

use std::marker::PhantomData;

use crate::run::{Payloads, Runtime, Transcript};
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

/// What a turn's context reads its agent's earlier turns from, beside the
/// payload bytes the transcript holds (and a context shares, see
/// [`Payloads`](crate::run::Payloads)): each transfer's span in those bytes
/// and the agent turn that made it, appended as the run records them and
/// shared with the contexts through the run's shared state. A context
/// builds its typed view only when the agent asks
/// (`Context::earlier_turns`), so a turn that does not look costs nothing.
#[derive(Default)]
pub(crate) struct EarlierLog {
    /// Each transfer, by sequence number: its payload's format and span in
    /// the run's payload bytes, and the agent turn that made it.
    transfers: Vec<Logged>,
    /// Agent turns logged.
    turns: u32,
}

/// Who sent a transfer logged in the [`EarlierLog`], to whom, and under
/// what.
pub(crate) struct Sent {
    pub(crate) from: Node,
    pub(crate) to: Node,
    /// The same transfer again (after an escalation or a failed turn).
    pub(crate) redelivery: bool,
    /// When the scope its sender worked under expires.
    pub(crate) sender_expires: Option<crate::spec::Expiry>,
}

/// One transfer in the [`EarlierLog`], in 40 bytes (a run logs every
/// transfer): the optional numbers are kept with a sentinel ([`NONE`],
/// [`NO_AGENT`]) and the expiry as its kind and value, not as `Option`s,
/// which would each add their own tag and padding.
#[derive(Clone, Copy)]
struct Logged {
    start: u32,
    end: u32,
    /// The input of the agent turn that made the transfer ([`NONE`]: no
    /// agent turn made it).
    turn_input: u32,
    /// The lease its sender worked under: the sender's input (for a
    /// redelivery, the original transfer's); what a lease granted by this
    /// transfer derives from ([`NONE`]: none).
    under: u32,
    /// When the scope its sender worked under expired, with
    /// `expires_kind`: what a renewal of the lease it grants must stay
    /// within.
    expires_value: u64,
    /// The agent whose turn made the transfer ([`NO_AGENT`]: none).
    turn_agent: u16,
    /// The agent that sent the transfer, a redelivery's too ([`NO_AGENT`]:
    /// none).
    from: u16,
    to: Node,
    format: PayloadFormat,
    /// 0: no scope, 1: never expires, 2: at a hop, 3: at a time.
    expires_kind: u8,
}

/// No such number, in a [`Logged`] field that may have none.
const NONE: u32 = u32::MAX;
/// No agent, in a [`Logged`] field that may have none (agents are numbered
/// below `u16::MAX`: a graph's agents are indexed by `u16`).
const NO_AGENT: u16 = u16::MAX;

impl Logged {
    fn turn(&self) -> Option<(u16, u32)> {
        (self.turn_agent != NO_AGENT).then_some((self.turn_agent, self.turn_input))
    }

    fn from(&self) -> Option<u16> {
        (self.from != NO_AGENT).then_some(self.from)
    }

    fn under(&self) -> Option<u32> {
        (self.under != NONE).then_some(self.under)
    }

    fn sender_expires(&self) -> Option<crate::spec::Expiry> {
        unpack_expiry(self.expires_kind, self.expires_value)
    }
}

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

impl EarlierLog {
    /// Logs transfer `seq` (the next one: transfers are logged in order),
    /// its payload at `span` of the run's payload bytes, made by `turn` (an
    /// agent and its input) and sent to `to`.
    pub(crate) fn log(
        &mut self,
        seq: usize,
        format: PayloadFormat,
        (start, end): (u32, u32),
        turn: Option<(u16, usize)>,
        sent: Sent,
    ) {
        let Sent {
            from,
            to,
            redelivery,
            sender_expires,
        } = sent;
        let from = match from {
            Node::Agent(a) => Some(a),
            _ => None,
        };
        // A redelivery carries the lease of the transfer it repeats: the
        // last one between the same two nodes.
        let under = if redelivery {
            self.transfers
                .iter()
                .rev()
                .find(|t| t.from() == from && t.to == to)
                .and_then(|t| t.under())
        } else {
            turn.map(|(_, input)| input as u32)
        };
        debug_assert_eq!(seq, self.transfers.len(), "transfers are logged in order");
        if self.transfers.is_empty() {
            // One allocation for a typical run's first rounds.
            self.transfers.reserve_exact(16);
        }
        let (expires_kind, expires_value) = pack_expiry(sender_expires);
        let (turn_agent, turn_input) =
            turn.map_or((NO_AGENT, NONE), |(agent, input)| (agent, input as u32));
        crate::run::payloads::push_grown(
            &mut self.transfers,
            Logged {
                start,
                end,
                turn_input,
                under: under.unwrap_or(NONE),
                expires_value,
                turn_agent,
                from: from.unwrap_or(NO_AGENT),
                to,
                format,
                expires_kind,
            },
        );
        self.turns += u32::from(turn.is_some());
    }

    /// Room for `transfers` more transfers (a run as large as the
    /// executor's last).
    pub(crate) fn reserve(&mut self, transfers: usize) {
        self.transfers.reserve_exact(transfers);
    }

    /// Turns logged so far.
    pub(crate) fn turn_count(&self) -> u32 {
        self.turns
    }

    /// The lease transfer `seq` was granted under (its sender's input),
    /// if its sender was an agent working on one.
    pub(crate) fn granted_under(&self, seq: u32) -> Option<u32> {
        self.transfers.get(seq as usize)?.under()
    }

    /// When the scope the sender of transfer `seq` worked under expired
    /// (`None`: no scope, or no such transfer).
    pub(crate) fn sender_expires(&self, seq: u32) -> Option<crate::spec::Expiry> {
        self.transfers.get(seq as usize)?.sender_expires()
    }

    /// Who sent transfer `seq` and to whom (`None`: no such transfer).
    pub(crate) fn ends(&self, seq: u32) -> Option<(Option<u16>, Node)> {
        let t = self.transfers.get(seq as usize)?;
        Some((t.from(), t.to))
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

    /// The log of transcript `t` as a run that made it would have built it
    /// (a resumed run builds it once, from its records): each transfer an
    /// agent made (a person's edit of one is not a turn of its own), with
    /// the last input that agent accepted before it.
    pub(crate) fn of_transcript(t: &Transcript) -> Self {
        let mut log = EarlierLog::default();
        let mut input: Vec<Option<usize>> = vec![None; t.graph.agents.len()];
        for (i, e) in t.entries.iter().enumerate() {
            let edge = t.graph.edges.get(e.edge as usize);
            let turn = match edge.map(|edge| edge.from) {
                Some(Node::Agent(from)) if !e.redelivery => input
                    .get(from as usize)
                    .copied()
                    .flatten()
                    .map(|j| (from, j)),
                _ => None,
            };
            let to = edge.map_or(Node::End, |edge| edge.to);
            let from = edge.map_or(Node::Start, |edge| edge.from);
            log.log(
                i,
                e.format,
                (e.start, e.end),
                turn,
                Sent {
                    from,
                    to,
                    redelivery: e.redelivery,
                    sender_expires: t.sender_scope(i).map(|(_, expires)| expires),
                },
            );
            if let Node::Agent(to) = to
                && e.status.ran()
                && let Some(slot) = input.get_mut(to as usize)
            {
                *slot = Some(i);
            }
        }
        log
    }

    /// Agent `A`'s turns among the first `upto` logged, typed, their
    /// payloads read from `bytes` (the run's, as they stood when the turn
    /// asking started).
    pub(crate) fn turns_of<W: Workflow, A: Agent<W>>(
        &self,
        upto: u32,
        bytes: &Payloads,
    ) -> Vec<EarlierTurn<W, A>> {
        let copy = |seq: u32| {
            let t = self.transfers[seq as usize];
            (
                t.format,
                bytes.get(t.start, t.end).unwrap_or_default().to_vec(),
            )
        };
        let mut seen = 0;
        let mut turns = Vec::new();
        for (seq, t) in self.transfers.iter().enumerate() {
            let Some((agent, input)) = t.turn() else {
                continue;
            };
            if seen == upto {
                break;
            }
            seen += 1;
            if agent == A::INDEX {
                turns.push(EarlierTurn {
                    input_seq: input as usize,
                    input: copy(input),
                    output_seq: seq,
                    to: t.to,
                    output: copy(seq as u32),
                    _of: PhantomData,
                });
            }
        }
        turns
    }
}

impl<W: Workflow> Runtime<'_, W> {
    /// How many logged turns agent `A`'s context may see: 0 when `A` has
    /// made no transfer yet (counted as the record grows, so a first turn
    /// costs nothing here).
    pub(crate) fn earlier_upto<A: Agent<W>>(&self) -> u32 {
        if self.sent_by.get(A::INDEX as usize).is_none_or(|n| *n == 0) {
            return 0;
        }
        self.logged_turns
    }

    /// Logs the transfer just recorded (the transcript's last entry): its
    /// payload, and the turn that made it when an agent sent it.
    pub(crate) fn log_transfer(&mut self, from: Node) {
        let t = &self.transcript;
        let i = t.entries.len() - 1;
        let e = &t.entries[i];
        let to = t
            .graph
            .edges
            .get(e.edge as usize)
            .map_or(Node::End, |e| e.to);
        let sent = Sent {
            from,
            to,
            redelivery: e.redelivery,
            sender_expires: t.sender_scope(i).map(|(_, expires)| expires),
        };
        self.log_sent(sent);
    }

    /// Logs the transfer just recorded (the transcript's last entry), sent
    /// as `sent` says (what [`log_transfer`](Self::log_transfer) looks up;
    /// the recording of a new transfer knows it already).
    #[inline]
    pub(crate) fn log_sent(&mut self, sent: Sent) {
        let t = &self.transcript;
        let i = t.entries.len() - 1;
        let e = &t.entries[i];
        let turn = match sent.from {
            Node::Agent(agent) if !sent.redelivery => self.input_of(agent, i).map(|j| (agent, j)),
            _ => None,
        };
        let mut log = self.shared.earlier();
        log.log(i, e.format, (e.start, e.end), turn, sent);
        self.logged_turns = log.turn_count();
    }

    /// The last input agent `agent` accepted before transfer `before`: the
    /// current turn's input when it is one (always, for turns the executor
    /// runs), else found by looking back.
    fn input_of(&self, agent: u16, before: usize) -> Option<usize> {
        let t = &self.transcript;
        let to_agent_ran = |i: usize| {
            t.entries.get(i).is_some_and(|e| {
                e.status.ran()
                    && t.graph.edges.get(e.edge as usize).map(|edge| edge.to)
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
    use crate::spec::Expiry;

    #[test]
    fn a_logged_transfer_is_40_bytes_and_reads_back_what_was_logged() {
        assert_eq!(std::mem::size_of::<Logged>(), 40);
        // The transcript's scopes are packed the same way.
        assert_eq!(std::mem::size_of::<crate::run::transcript::ScopeAt>(), 32);
        for expires in [
            None,
            Some(Expiry::Never),
            Some(Expiry::AtHop(u32::MAX)),
            Some(Expiry::AtUnixMs(u64::MAX)),
        ] {
            let (kind, value) = pack_expiry(expires);
            assert_eq!(unpack_expiry(kind, value), expires);
        }
        let mut log = EarlierLog::default();
        let expiries = [
            None,
            Some(Expiry::Never),
            Some(Expiry::AtHop(7)),
            Some(Expiry::AtUnixMs(1_700_000_000_000)),
        ];
        for (seq, expires) in expiries.into_iter().enumerate() {
            log.log(
                seq,
                PayloadFormat::Msgpack,
                (seq as u32 * 10, seq as u32 * 10 + 10),
                (seq > 0).then(|| (1, seq - 1)),
                Sent {
                    from: if seq == 0 {
                        Node::Start
                    } else {
                        Node::Agent(1)
                    },
                    to: Node::Agent(2),
                    redelivery: false,
                    sender_expires: expires,
                },
            );
            assert_eq!(log.sender_expires(seq as u32), expires);
        }
        assert_eq!(log.turn_count(), 3);
        assert_eq!(log.ends(0), Some((None, Node::Agent(2))));
        assert_eq!(log.ends(3), Some((Some(1), Node::Agent(2))));
        assert_eq!(log.granted_under(0), None);
        assert_eq!(log.granted_under(3), Some(2));
        assert_eq!(log.lease_chain(3), [3, 2, 1, 0]);
    }
}
