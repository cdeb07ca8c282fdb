//! Leases and fencing tokens on PostgreSQL: the rules of `workflow-core`
//! ([`decide_claim`], [`decide_write`]) applied to the `workflow_leases`
//! row of a run, locked (`FOR UPDATE`) inside the transaction of the claim
//! or the write, with the server's clock (one clock for every worker on
//! every machine).

use postgres::Transaction;
use workflow_core::ledger::{Lease, LeaseRow, LedgerError, decide_claim, decide_write};

use crate::ledger::{id, storage};

/// The server's clock, in ms since the Unix epoch.
const NOW_MS: &str = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint";

/// The lease row of `run_id`, locked until `tx` ends, and the server's
/// clock.
pub(crate) fn lock(
    tx: &mut Transaction<'_>,
    run_id: u64,
) -> Result<(Option<LeaseRow>, u64), LedgerError> {
    let row = tx
        .query_opt(
            &format!(
                "SELECT holder, token, expires_at_ms, {NOW_MS}
                 FROM workflow_leases WHERE run_id = $1 FOR UPDATE"
            ),
            &[&id(run_id)],
        )
        .map_err(storage)?;
    match row {
        Some(row) => Ok((
            Some(LeaseRow {
                holder: row.get(0),
                token: row.get::<_, i64>(1) as u64,
                expires_at_ms: row.get::<_, i64>(2) as u64,
            }),
            row.get::<_, i64>(3) as u64,
        )),
        None => {
            let now: i64 = tx
                .query_one(&format!("SELECT {NOW_MS}"), &[])
                .map_err(storage)?
                .get(0);
            Ok((None, now as u64))
        }
    }
}

/// Stores `row` as the lease of `run_id`, inside `tx`.
pub(crate) fn put(
    tx: &mut Transaction<'_>,
    run_id: u64,
    row: &LeaseRow,
) -> Result<(), LedgerError> {
    tx.execute(
        "INSERT INTO workflow_leases (run_id, holder, token, expires_at_ms)
         VALUES ($1, $2, $3, $4)
         ON CONFLICT (run_id) DO UPDATE SET holder = EXCLUDED.holder,
             token = EXCLUDED.token, expires_at_ms = EXCLUDED.expires_at_ms",
        &[
            &id(run_id),
            &row.holder,
            &(row.token as i64),
            &(row.expires_at_ms as i64),
        ],
    )
    .map_err(storage)?;
    Ok(())
}

/// Claims `run_id` for `holder` for `ttl_ms` inside `tx` ([`decide_claim`]).
pub(crate) fn claim(
    tx: &mut Transaction<'_>,
    run_id: u64,
    holder: &str,
    ttl_ms: u64,
) -> Result<Lease, LedgerError> {
    // A row to lock, even for a run never claimed: two claimers of a new run
    // then queue on it instead of both taking token 1. Token 0, expired, is
    // what `decide_claim` reads as no lease (the claim takes token 1).
    tx.execute(
        "INSERT INTO workflow_leases (run_id, holder, token, expires_at_ms)
         VALUES ($1, '', 0, 0) ON CONFLICT (run_id) DO NOTHING",
        &[&id(run_id)],
    )
    .map_err(storage)?;
    let (row, now) = lock(tx, run_id)?;
    let lease = decide_claim(run_id, row.as_ref(), holder, ttl_ms, now)?;
    put(
        tx,
        run_id,
        &LeaseRow {
            holder: lease.holder.clone(),
            token: lease.token,
            expires_at_ms: lease.expires_at_ms,
        },
    )?;
    Ok(lease)
}

/// Checks a write for `run_id` made under `lease` inside `tx`
/// ([`decide_write`]): refused when a newer claim exists, the lease renewed
/// when its term is half gone. The row stays locked until `tx` commits, so
/// no claim slips in between the check and the commit.
pub(crate) fn check_write(
    tx: &mut Transaction<'_>,
    run_id: u64,
    lease: &Lease,
) -> Result<(), LedgerError> {
    if lease.run_id != run_id {
        return Err(LedgerError::Storage(format!(
            "a write for run {run_id} was made under the lease of run {}",
            lease.run_id
        )));
    }
    let (row, now) = lock(tx, run_id)?;
    match (decide_write(lease, row.as_ref(), now)?, row) {
        (None, _) => Ok(()),
        (Some(renewed), Some(_)) => put(tx, run_id, &renewed),
        // The first write of a fresh run: its row, unless a claim stored
        // one meanwhile (then the write is decided against that one).
        (Some(first), None) => {
            let inserted = tx
                .execute(
                    "INSERT INTO workflow_leases (run_id, holder, token, expires_at_ms)
                     VALUES ($1, $2, $3, $4) ON CONFLICT (run_id) DO NOTHING",
                    &[
                        &id(run_id),
                        &first.holder,
                        &(first.token as i64),
                        &(first.expires_at_ms as i64),
                    ],
                )
                .map_err(storage)?;
            if inserted == 1 {
                return Ok(());
            }
            let (row, now) = lock(tx, run_id)?;
            if let Some(renewed) = decide_write(lease, row.as_ref(), now)? {
                put(tx, run_id, &renewed)?;
            }
            Ok(())
        }
    }
}

/// Renews `lease` for a full term inside `tx`, unless it was taken over.
pub(crate) fn renew(tx: &mut Transaction<'_>, lease: &Lease) -> Result<(), LedgerError> {
    let (row, now) = lock(tx, lease.run_id)?;
    decide_write(lease, row.as_ref(), now)?;
    put(
        tx,
        lease.run_id,
        &LeaseRow {
            holder: lease.holder.clone(),
            token: lease.token,
            expires_at_ms: now.saturating_add(lease.ttl_ms),
        },
    )
}

/// Releases `lease` inside `tx`: the run can be claimed at once (with the
/// next token). A lease that was taken over is left alone: `false`.
pub(crate) fn release(tx: &mut Transaction<'_>, lease: &Lease) -> Result<bool, LedgerError> {
    let released = tx
        .execute(
            "UPDATE workflow_leases SET expires_at_ms = 0
             WHERE run_id = $1 AND token = $2",
            &[&id(lease.run_id), &(lease.token as i64)],
        )
        .map_err(storage)?;
    Ok(released == 1)
}
