//! Signed checkpoints of the ledger's heads (feature `checkpoint`): an
//! anchor outside the file.
//!
//! The hash chain finds a record edited by someone who did not re-hash the
//! chain after it. Someone who can write the file can re-hash it, cut a
//! run's tail together with its head, remove a run or put back an older
//! copy of the file, and the chain alone still verifies. A [`Checkpoint`]
//! holds every run's head (last sequence number and hash) at a moment, and
//! is signed with an ed25519 key kept away from the ledger
//! ([`CheckpointKey`]); [`Checkpoint::check`] compares a ledger with it and
//! names every run rewritten, cut, rolled back or removed since. What happened after the last checkpoint is not covered.

mod key;

pub use key::*;

use serde::{Deserialize, Serialize};

use crate::ledger::{Ledger, LedgerError, Tampering, VerifyError};

/// The format of a checkpoint (its canonical form and its file).
pub const CHECKPOINT_FORMAT: &str = "workflow-ledger-checkpoint/1";

/// A run's head at the checkpoint: its last record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckpointHead {
    /// The run.
    pub run_id: u64,
    /// Its last record's sequence number.
    pub seq: u32,
    /// Its last record's hash.
    pub hash: String,
}

/// The heads of every run of a ledger at one moment, and how many records
/// they close.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Checkpoint {
    /// When it was taken: milliseconds since the Unix epoch.
    pub taken_at_ms: u64,
    /// The records of all runs (the sum of each head's `seq + 1`).
    pub records: u64,
    /// Every run's head, by increasing run id.
    pub heads: Vec<CheckpointHead>,
}

/// A checkpoint with its signature, as its file holds it (JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignedCheckpoint {
    /// [`CHECKPOINT_FORMAT`].
    pub format: String,
    /// The checkpoint.
    pub checkpoint: Checkpoint,
    /// The public key of the key that signed it, hex-encoded (which key;
    /// verifying takes the trusted key, never this one).
    pub public_key: String,
    /// The ed25519 signature of [`Checkpoint::canonical`], hex-encoded.
    pub signature: String,
}

/// Why a checkpoint could not be taken, read or trusted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CheckpointError {
    /// The ledger could not be read.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    /// A run does not verify: a checkpoint would vouch for tampered records.
    #[error("run {run_id} does not verify, no checkpoint taken: {tampering}")]
    DoesNotVerify {
        /// The run.
        run_id: u64,
        /// What is wrong with it.
        tampering: Tampering,
    },
    /// The checkpoint is not signed by the trusted key, or was changed
    /// after it was signed.
    #[error("the checkpoint's signature does not verify with the public key given: {0}")]
    BadSignature(String),
    /// The checkpoint (or a key) does not read: what is wrong.
    #[error("not a checkpoint of format {CHECKPOINT_FORMAT}: {0}")]
    Unreadable(String),
    /// A key does not read.
    #[error("not an ed25519 key: {0}")]
    BadKey(String),
    /// The system clock or random source failed.
    #[error("{0}")]
    System(String),
}

/// What a ledger no longer holds as the checkpoint saw it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Finding {
    /// The run's record at the checkpoint's sequence number is another
    /// record: the run was rewritten (and re-hashed) up to there.
    #[error("run {run_id} was rewritten: its record #{seq} is not the one the checkpoint signed")]
    Rewritten {
        /// The run.
        run_id: u64,
        /// The checkpoint's last sequence number of the run.
        seq: u32,
    },
    /// The run has fewer records than at the checkpoint, and its head (in
    /// the ledger) does not match its last record: records were cut off
    /// its end (plain `verify` sees this too).
    #[error("run {run_id} was cut: the checkpoint signed #{seq}, the run now ends {}", ends(.last))]
    Cut {
        /// The run.
        run_id: u64,
        /// The checkpoint's last sequence number of the run.
        seq: u32,
        /// The run's last record now.
        last: Option<u32>,
    },
    /// The run has fewer records than at the checkpoint, and its head
    /// matches its last record: the run is as it was at an earlier time
    /// (an older copy of the ledger was put back, or its tail was cut
    /// together with its head). Plain `verify` cannot see this.
    #[error(
        "run {run_id} was rolled back: the checkpoint signed #{seq}, the run now ends {} with a head to match (an older copy, or its tail cut together with its head)", ends(.last)
    )]
    RolledBack {
        /// The run.
        run_id: u64,
        /// The checkpoint's last sequence number of the run.
        seq: u32,
        /// The run's last record now.
        last: Option<u32>,
    },
    /// The run is gone: neither records nor head.
    #[error("run {run_id} was removed: the checkpoint signed #{seq}, the ledger has no such run")]
    Removed {
        /// The run.
        run_id: u64,
        /// The checkpoint's last sequence number of the run.
        seq: u32,
    },
}

fn ends(last: &Option<u32>) -> String {
    match last {
        Some(last) => format!("at #{last}"),
        None => "before its first record".into(),
    }
}

impl Checkpoint {
    /// The heads of every run of `ledger`, now. Every run is verified
    /// first: a run that does not verify is refused, so that a checkpoint
    /// never vouches for tampered records.
    pub fn take(ledger: &dyn Ledger) -> Result<Checkpoint, CheckpointError> {
        let taken_at_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_err(|e| CheckpointError::System(format!("the clock is before 1970: {e}")))?
            .as_millis() as u64;
        let mut heads = Vec::new();
        let mut records = 0u64;
        for run_id in ledger.runs()? {
            match ledger.verify_run(run_id) {
                Ok(()) => {}
                Err(VerifyError::Tampered(tampering)) => {
                    return Err(CheckpointError::DoesNotVerify { run_id, tampering });
                }
                Err(VerifyError::Unreadable(e)) => return Err(CheckpointError::Ledger(e)),
            }
            let Some(last) = ledger.records(run_id)?.pop() else {
                return Err(CheckpointError::DoesNotVerify {
                    run_id,
                    tampering: Tampering::Empty,
                });
            };
            records += u64::from(last.seq) + 1;
            heads.push(CheckpointHead {
                run_id,
                seq: last.seq,
                hash: last.hash,
            });
        }
        heads.sort_by_key(|h| h.run_id);
        Ok(Checkpoint {
            taken_at_ms,
            records,
            heads,
        })
    }

    /// The bytes that are signed: the format, the time, the count and one
    /// line per head (`run seq hash`), in run order. Refused when a field
    /// could make two checkpoints read the same (a hash that is not 64 hex
    /// digits, heads out of order).
    pub fn canonical(&self) -> Result<Vec<u8>, CheckpointError> {
        let mut text = format!(
            "{CHECKPOINT_FORMAT}\ntaken_at_ms {}\nrecords {}\nruns {}\n",
            self.taken_at_ms,
            self.records,
            self.heads.len()
        );
        let mut previous: Option<u64> = None;
        for head in &self.heads {
            let hex = head.hash.len() == 64
                && head
                    .hash
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
            if !hex {
                return Err(CheckpointError::Unreadable(format!(
                    "the head of run {} is not 64 lowercase hex digits",
                    head.run_id
                )));
            }
            if previous.is_some_and(|p| p >= head.run_id) {
                return Err(CheckpointError::Unreadable(format!(
                    "run {} is out of order or twice",
                    head.run_id
                )));
            }
            previous = Some(head.run_id);
            text.push_str(&format!("{} {} {}\n", head.run_id, head.seq, head.hash));
        }
        Ok(text.into_bytes())
    }

    /// Signs the checkpoint with `key`.
    pub fn sign(&self, key: &CheckpointKey) -> Result<SignedCheckpoint, CheckpointError> {
        let signature = key.sign(&self.canonical()?);
        Ok(SignedCheckpoint {
            format: CHECKPOINT_FORMAT.to_owned(),
            checkpoint: self.clone(),
            public_key: key.public_key().to_hex(),
            signature: hex::encode(signature),
        })
    }

    /// Compares `ledger` with the checkpoint: every run of the checkpoint
    /// must still hold, at the checkpoint's sequence number, the record the
    /// checkpoint signed (records after it are the ledger's business; the
    /// chain up to there is checked by `verify`). Empty when nothing is
    /// wrong; otherwise one finding per run that is not as signed.
    pub fn check(&self, ledger: &dyn Ledger) -> Result<Vec<Finding>, LedgerError> {
        let mut findings = Vec::new();
        for head in &self.heads {
            let (run_id, seq) = (head.run_id, head.seq);
            let records = ledger.records(run_id)?;
            if let Some(record) = records.iter().find(|r| r.seq == seq) {
                if record.hash != head.hash || record.compute_hash() != head.hash {
                    findings.push(Finding::Rewritten { run_id, seq });
                }
                continue;
            }
            let stored_head = ledger.head(run_id)?;
            let last = records.last();
            let finding = match (last, &stored_head) {
                (None, None) => Finding::Removed { run_id, seq },
                (Some(last), Some((head_seq, head_hash)))
                    if *head_seq == last.seq && *head_hash == last.hash =>
                {
                    Finding::RolledBack {
                        run_id,
                        seq,
                        last: Some(last.seq),
                    }
                }
                (last, _) => Finding::Cut {
                    run_id,
                    seq,
                    last: last.map(|r| r.seq),
                },
            };
            findings.push(finding);
        }
        Ok(findings)
    }
}

impl SignedCheckpoint {
    /// The checkpoint, if its signature verifies with `public` (the
    /// trusted key, never the one the file names).
    pub fn verify(&self, public: &CheckpointPublicKey) -> Result<&Checkpoint, CheckpointError> {
        if self.format != CHECKPOINT_FORMAT {
            return Err(CheckpointError::Unreadable(format!(
                "its format is {:?}",
                self.format
            )));
        }
        if self.public_key != public.to_hex() {
            return Err(CheckpointError::BadSignature(format!(
                "it was signed by key {}, not by {}",
                self.public_key,
                public.to_hex()
            )));
        }
        let signature = hex::decode(&self.signature)
            .map_err(|e| CheckpointError::BadSignature(format!("the signature is not hex: {e}")))?;
        public.verify(&self.checkpoint.canonical()?, &signature)?;
        Ok(&self.checkpoint)
    }

    /// The checkpoint file's text (JSON).
    pub fn to_json(&self) -> String {
        // Strings and integers only: serializing cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Reads a checkpoint file's text (unknown fields refused); its
    /// signature is checked by [`verify`](Self::verify).
    pub fn from_json(text: &str) -> Result<SignedCheckpoint, CheckpointError> {
        serde_json::from_str(text).map_err(|e| CheckpointError::Unreadable(e.to_string()))
    }
}
