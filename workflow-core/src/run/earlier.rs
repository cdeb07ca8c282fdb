//! An agent's own earlier turns in this run, read from the record: what it
//! received and what it handed on each time, so that a turn that runs again
//! (returned to, or around a bounded loop) can see what it did before.

use std::marker::PhantomData;
use std::sync::Arc;

use crate::run::{Runtime, Transcript};
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

impl<W: Workflow> Runtime<'_, W> {
    /// Agent `A`'s earlier turns in the run's record, oldest first: each
    /// transfer `A` made (a person's edit of one is not a turn of its own),
    /// with the last input `A` accepted before it. `None` when `A` has made
    /// no transfer yet (counted as the record grows, so a first turn costs
    /// nothing here).
    pub(crate) fn earlier_turns<A: Agent<W>>(&self) -> Option<Arc<[EarlierTurn<W, A>]>> {
        if self.sent_by.get(A::INDEX as usize).is_none_or(|n| *n == 0) {
            return None;
        }
        Some(earlier_in::<W, A>(&self.transcript).into())
    }
}

/// The turns of agent `A` in `t` (see [`Runtime::earlier_turns`]).
fn earlier_in<W: Workflow, A: Agent<W>>(t: &Transcript) -> Vec<EarlierTurn<W, A>> {
    let me = Node::Agent(A::INDEX);
    let copy = |i: usize| {
        let e = &t.entries[i];
        (e.format, t.payload_bytes(i).unwrap_or_default().to_vec())
    };
    let mut input = None;
    let mut turns = Vec::new();
    for (i, e) in t.entries.iter().enumerate() {
        let Some(edge) = W::GRAPH.edges.get(e.edge as usize) else {
            continue;
        };
        if edge.from == me
            && !e.redelivery
            && let Some(j) = input
        {
            turns.push(EarlierTurn {
                input_seq: j,
                input: copy(j),
                output_seq: i,
                to: edge.to,
                output: copy(i),
                _of: PhantomData,
            });
        }
        if edge.to == me && e.status.ran() {
            input = Some(i);
        }
    }
    turns
}
