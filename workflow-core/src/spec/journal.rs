//! What is wrong with a journaled tool call: the error a resume refuses with
//! and `verify` reports, naming the run, the turn and the call.

/// A journaled tool call (or a tool call recorded in a turn) that cannot be
/// trusted: its run, its turn, its index and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("run {run_id}, turn #{turn_seq}, tool call {index}: {problem}")]
pub struct JournalTampering {
    /// The run.
    pub run_id: u64,
    /// The turn: the sequence number its outcome takes.
    pub turn_seq: u32,
    /// The call's index in its turn.
    pub index: u32,
    /// What is wrong.
    pub problem: JournalProblem,
}

/// What is wrong with a journaled tool call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JournalProblem {
    /// The result is not the one its digest was taken of: it was edited.
    #[error("its result does not match its digest: the result was edited")]
    Digest,
    /// The entry does not match its hash, which binds it to its run, its
    /// turn, its index and the record the turn worked on: it was edited, or
    /// moved here from another place.
    #[error("it does not match its hash: the entry was edited, or moved from another turn or run")]
    Unbound,
    /// The entry at this place is another call's (entries were reordered),
    /// or calls before it are missing (entries were removed).
    #[error("the entry here is call {found}: entries were removed or reordered")]
    OutOfPlace {
        /// The index the entry found here holds.
        found: u32,
    },
    /// The turn's record (in the hash chain) holds another call at this
    /// index, or none.
    #[error("it is not the call the turn's record holds at this index")]
    NotAsRecorded,
}
