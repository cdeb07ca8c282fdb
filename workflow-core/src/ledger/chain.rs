//! The hash chain's check: `verify` names the first record that was edited,
//! removed, reordered or cut off.

use crate::ledger::{GENESIS, LedgerRecord};
use crate::spec::LedgerError;

/// What [`verify`] found wrong, at which record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Tampering {
    /// The run has no records.
    #[error("the run has no records")]
    Empty,
    /// The run has no records but its head names a last one: every record
    /// of the run was removed.
    #[error("its head says #{head}, but the run has no records: they were removed")]
    Removed {
        /// The last record the head names.
        head: u32,
    },
    /// A stored record does not read as a record (not JSON, another shape,
    /// or stored under a sequence number it does not carry).
    #[error("record #{seq} does not read: {why}")]
    Unreadable {
        /// The record's place in the run.
        seq: u32,
        /// What is wrong with it.
        why: String,
    },
    /// The run's stored head does not read.
    #[error("its head does not read: {why}")]
    HeadUnreadable {
        /// What is wrong with it.
        why: String,
    },
    /// A record's sequence number is not the next one: a record before it
    /// was removed, or records were reordered.
    #[error("record #{found} stands where #{expected} should: a record is missing or out of order")]
    Gap {
        /// The sequence number expected.
        expected: u32,
        /// The one found.
        found: u32,
    },
    /// A record does not chain to the one before it.
    #[error("record #{seq} does not chain to the record before it")]
    Unchained {
        /// The record.
        seq: u32,
    },
    /// A record's content does not match its hash: it was edited.
    #[error("record #{seq} was edited: its content does not match its hash")]
    Edited {
        /// The record.
        seq: u32,
    },
    /// The run does not end with its head: records were cut off the end.
    #[error("the run ends at #{last} but its head says #{head}: records were cut off")]
    Truncated {
        /// The last record present.
        last: u32,
        /// The last record the head names.
        head: u32,
    },
    /// A record of another run is mixed in.
    #[error("record #{seq} belongs to run {run_id}")]
    ForeignRun {
        /// The record.
        seq: u32,
        /// Its run.
        run_id: u64,
    },
    /// A journaled tool call (or a tool call a record holds) is not what
    /// was journaled.
    #[error("the tool-call journal was tampered with: {0}")]
    Journal(crate::spec::JournalTampering),
}

/// Checks a run's records: contiguous sequence numbers from 0, each
/// chained to the one before, each matching its hash, and (when `head` is
/// given: the last sequence number and hash the ledger recorded for the run)
/// nothing cut off the end.
pub fn verify(
    run_id: u64,
    records: &[LedgerRecord],
    head: Option<(u32, &str)>,
) -> Result<(), Tampering> {
    let Some(last) = records.last() else {
        return Err(match head {
            Some((head, _)) => Tampering::Removed { head },
            None => Tampering::Empty,
        });
    };
    let mut prev = GENESIS;
    for (i, r) in records.iter().enumerate() {
        if r.run_id != run_id {
            return Err(Tampering::ForeignRun {
                seq: r.seq,
                run_id: r.run_id,
            });
        }
        if r.seq as usize != i {
            return Err(Tampering::Gap {
                expected: i as u32,
                found: r.seq,
            });
        }
        if r.prev_hash != prev {
            return Err(Tampering::Unchained { seq: r.seq });
        }
        if r.compute_hash() != r.hash {
            return Err(Tampering::Edited { seq: r.seq });
        }
        prev = &r.hash;
    }
    if let Some((head_seq, head_hash)) = head
        && (head_seq != last.seq || head_hash != last.hash)
    {
        return Err(Tampering::Truncated {
            last: last.seq,
            head: head_seq,
        });
    }
    Ok(())
}

/// Why a stored run does not verify ([`Ledger::verify_run`](crate::ledger::Ledger::verify_run)):
/// its records were tampered with, or the ledger could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// The run was read and does not verify: what is wrong, at which
    /// record. A record or head that does not read as one is tampering
    /// too ([`Tampering::Unreadable`], [`Tampering::HeadUnreadable`]).
    #[error("{0}")]
    Tampered(Tampering),
    /// The ledger could not be read (the storage failed): nothing is known
    /// about the run.
    #[error("could not read the run: {0}")]
    Unreadable(LedgerError),
}

impl From<LedgerError> for VerifyError {
    /// A record or head that does not read is tampering; any other ledger
    /// error is a failure to read.
    fn from(e: LedgerError) -> Self {
        match e {
            LedgerError::CorruptRecord { seq, why, .. } => {
                VerifyError::Tampered(Tampering::Unreadable { seq, why })
            }
            LedgerError::CorruptHead { why, .. } => {
                VerifyError::Tampered(Tampering::HeadUnreadable { why })
            }
            e => VerifyError::Unreadable(e),
        }
    }
}

impl From<Tampering> for VerifyError {
    fn from(t: Tampering) -> Self {
        VerifyError::Tampered(t)
    }
}
