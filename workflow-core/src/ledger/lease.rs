//! One owner per run at a time (guarantee 17): a lease on a run with a
//! fencing token.
//!
//! Whoever works on a run holds its lease: a fresh run from its first
//! record, a resumed or decided run from its claim
//! ([`Ledger::claim`](crate::ledger::Ledger::claim)). A claim is refused
//! while another holder's lease has not expired
//! ([`LedgerError::Claimed`]); once it has, the claim takes the run over
//! with the next fencing token, and every later write made under an older
//! token is refused ([`LedgerError::Fenced`]) inside the write's own
//! transaction: a holder that lost its lease (paused, partitioned, slow)
//! can never commit a record or a journal entry after another took over.
//!
//! The rules are pure functions ([`decide_claim`], [`decide_write`]) over the
//! row a ledger keeps per run ([`LeaseRow`]), so that every backend (the
//! memory and SQLite ledgers here, a shared database elsewhere) applies the
//! same ones under its own lock or transaction.

use crate::spec::LedgerError;

/// A claim on one run: who holds it, its fencing token, its term.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The run.
    pub run_id: u64,
    /// Who holds it (an executor's name: host, process, executor).
    pub holder: String,
    /// The fencing token: each claim of the run takes the next number, from
    /// 1; 0 is a lease a ledger that keeps no leases granted (nothing is
    /// fenced).
    pub token: u64,
    /// How long the lease lasts after each write made under it, in ms.
    pub ttl_ms: u64,
    /// When it expires unless renewed, in ms since the Unix epoch (as of the
    /// claim).
    pub expires_at_ms: u64,
}

impl Lease {
    /// The lease a fresh run holds from its first record on (token 1: nobody
    /// can have claimed a run id that was just drawn).
    pub fn fresh(run_id: u64, holder: impl Into<String>, ttl_ms: u64) -> Lease {
        Lease {
            run_id,
            holder: holder.into(),
            token: 1,
            ttl_ms,
            expires_at_ms: now_ms().saturating_add(ttl_ms),
        }
    }

    /// The lease of a ledger that keeps none: token 0, never fenced.
    pub fn unfenced(run_id: u64, holder: impl Into<String>) -> Lease {
        Lease {
            run_id,
            holder: holder.into(),
            token: 0,
            ttl_ms: 0,
            expires_at_ms: 0,
        }
    }
}

/// What a ledger stores per run about its lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseRow {
    /// Who holds (or last held) the run.
    pub holder: String,
    /// The newest fencing token of the run.
    pub token: u64,
    /// When the lease expires, in ms since the Unix epoch (0 once released).
    pub expires_at_ms: u64,
}

/// Milliseconds since the Unix epoch, by the system clock (leases are
/// compared across processes and machines).
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A claim of `run_id` by `holder` for `ttl_ms`, given the run's current
/// row: refused while another lease is live, else the next token.
pub fn decide_claim(
    run_id: u64,
    current: Option<&LeaseRow>,
    holder: &str,
    ttl_ms: u64,
    now_ms: u64,
) -> Result<Lease, LedgerError> {
    let token = match current {
        None => 1,
        Some(row) if row.expires_at_ms > now_ms => {
            return Err(LedgerError::Claimed {
                run_id,
                holder: row.holder.clone(),
                expires_at_ms: row.expires_at_ms,
                remaining_ms: row.expires_at_ms - now_ms,
            });
        }
        Some(row) => row.token.checked_add(1).ok_or_else(|| {
            LedgerError::Corrupt(format!("run {run_id}: the fencing token is at its maximum"))
        })?,
    };
    Ok(Lease {
        run_id,
        holder: holder.to_owned(),
        token,
        ttl_ms,
        expires_at_ms: now_ms.saturating_add(ttl_ms),
    })
}

/// A write made under `lease`, given the run's current row: refused when a
/// newer claim exists; otherwise the row to store, if it changes (the row
/// of a fresh run's first write, or a renewal once half the term has
/// passed: the heartbeat of every write).
pub fn decide_write(
    lease: &Lease,
    current: Option<&LeaseRow>,
    now_ms: u64,
) -> Result<Option<LeaseRow>, LedgerError> {
    let renewed = LeaseRow {
        holder: lease.holder.clone(),
        token: lease.token,
        expires_at_ms: now_ms.saturating_add(lease.ttl_ms),
    };
    match current {
        None => Ok(Some(renewed)),
        Some(row) if row.token != lease.token => Err(LedgerError::Fenced {
            run_id: lease.run_id,
            token: lease.token,
            current: row.token,
        }),
        Some(row) if row.expires_at_ms.saturating_sub(now_ms) < lease.ttl_ms / 2 => {
            Ok(Some(renewed))
        }
        Some(_) => Ok(None),
    }
}

/// Checks that a write for `run_id` is made under that run's lease.
pub(crate) fn same_run(lease: &Lease, run_id: u64) -> Result<(), LedgerError> {
    if lease.run_id == run_id {
        Ok(())
    } else {
        Err(LedgerError::Storage(format!(
            "a write for run {run_id} was made under the lease of run {}",
            lease.run_id
        )))
    }
}

/// Who an executor claims runs as, unless named
/// (`Executor::with_holder`): the host, the process and a number per
/// executor, so that two executors of one process are two holders.
pub(crate) fn default_holder() -> String {
    static EXECUTORS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let n = EXECUTORS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_owned());
    format!("{host} pid {} executor {n}", std::process::id())
}

/// A lease held while a run is worked on, released when dropped: when the
/// run ends (completed, suspended, failed), when a resume fails before its
/// turn, or when the run's future is dropped. A release that fails is not
/// an error: the lease then expires at its term.
pub(crate) struct LeaseGuard<'x> {
    pub(crate) ledger: &'x dyn crate::ledger::Ledger,
    pub(crate) lease: std::sync::Arc<Lease>,
}

impl Drop for LeaseGuard<'_> {
    fn drop(&mut self) {
        let _ = self.ledger.release(&self.lease);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(token: u64, expires_at_ms: u64) -> LeaseRow {
        LeaseRow {
            holder: "a".into(),
            token,
            expires_at_ms,
        }
    }

    #[test]
    fn a_live_lease_refuses_a_claim_naming_its_holder_and_expiry() {
        let err = decide_claim(7, Some(&row(3, 1_500)), "b", 100, 1_000).unwrap_err();
        assert_eq!(
            err,
            LedgerError::Claimed {
                run_id: 7,
                holder: "a".into(),
                expires_at_ms: 1_500,
                remaining_ms: 500
            }
        );
    }

    #[test]
    fn an_expired_or_released_lease_is_taken_over_with_the_next_token() {
        assert_eq!(decide_claim(7, None, "b", 100, 1_000).unwrap().token, 1);
        let taken = decide_claim(7, Some(&row(3, 1_000)), "b", 100, 1_000).unwrap();
        assert_eq!((taken.token, taken.expires_at_ms), (4, 1_100));
        assert_eq!(
            decide_claim(7, Some(&row(3, 0)), "b", 100, 1_000)
                .unwrap()
                .token,
            4
        );
        assert!(matches!(
            decide_claim(7, Some(&row(u64::MAX, 0)), "b", 100, 1_000),
            Err(LedgerError::Corrupt(_))
        ));
    }

    #[test]
    fn a_write_under_an_older_token_is_fenced_and_a_current_one_renews_at_half_term() {
        let lease = Lease {
            run_id: 7,
            holder: "a".into(),
            token: 3,
            ttl_ms: 100,
            expires_at_ms: 1_100,
        };
        assert_eq!(
            decide_write(&lease, Some(&row(4, 5_000)), 1_000),
            Err(LedgerError::Fenced {
                run_id: 7,
                token: 3,
                current: 4
            })
        );
        assert_eq!(decide_write(&lease, Some(&row(3, 1_080)), 1_000), Ok(None));
        assert_eq!(
            decide_write(&lease, Some(&row(3, 1_040)), 1_000),
            Ok(Some(row(3, 1_100)))
        );
        // Expired but not taken over: still the run's owner.
        assert_eq!(
            decide_write(&lease, Some(&row(3, 0)), 1_000),
            Ok(Some(row(3, 1_100)))
        );
        assert_eq!(decide_write(&lease, None, 1_000), Ok(Some(row(3, 1_100))));
    }
}
