//! The ledger's tables, their version, and the migrations between versions.

use postgres::Client;

use crate::OpenError;
use crate::connection::describe;

/// The schema version this library writes, and the newest it reads.
pub const SCHEMA_VERSION: i64 = 4;

/// Migration `i` takes a database from version `i` to version `i + 1`
/// (version 0: no ledger tables at all).
const MIGRATIONS: &[&str] = &[
    // 1: records (the JSON text as written, so that it reads back byte for
    // byte), the heads kept apart from them, and the tool-call journal.
    // Run ids are u64 stored bit for bit in a BIGINT; sequence numbers and
    // indices are u32, which BIGINT holds whole.
    "CREATE TABLE workflow_records (
         run_id BIGINT NOT NULL,
         seq BIGINT NOT NULL,
         record TEXT NOT NULL,
         PRIMARY KEY (run_id, seq)
     );
     CREATE TABLE workflow_heads (
         run_id BIGINT PRIMARY KEY,
         seq BIGINT NOT NULL,
         hash TEXT NOT NULL
     );
     CREATE TABLE workflow_tool_calls (
         run_id BIGINT NOT NULL,
         turn_seq BIGINT NOT NULL,
         idx BIGINT NOT NULL,
         call TEXT NOT NULL,
         PRIMARY KEY (run_id, turn_seq, idx)
     );",
    // 2: the work queue. A run is submitted `queued`; a claim makes it
    // `claimed` by a holder until `lease_until`, with the next fencing
    // token; writes under a lease check the token in their transaction.
    "CREATE TABLE workflow_queue (
         run_id BIGINT PRIMARY KEY,
         workflow TEXT NOT NULL,
         input TEXT NOT NULL,
         state TEXT NOT NULL DEFAULT 'queued'
             CHECK (state IN ('queued', 'claimed', 'done')),
         holder TEXT,
         token BIGINT NOT NULL DEFAULT 0,
         lease_until TIMESTAMPTZ,
         submitted_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp()
     );
     CREATE INDEX workflow_queue_claimable
         ON workflow_queue (submitted_at, run_id) WHERE state <> 'done';",
    // 3: one meaning of a lease. The leases move to `workflow_leases`, the
    // row `workflow-core`'s rules decide on (`decide_claim`,
    // `decide_write`), for runs claimed from the queue and runs resumed by
    // hand alike; the queue keeps what to run and where the run stands
    // (`suspended`: waiting for a decision, which is stored with it until a
    // worker applies it; `outcome`: how it ended).
    "CREATE TABLE workflow_leases (
         run_id BIGINT PRIMARY KEY,
         holder TEXT NOT NULL,
         token BIGINT NOT NULL,
         expires_at_ms BIGINT NOT NULL
     );
     INSERT INTO workflow_leases (run_id, holder, token, expires_at_ms)
         SELECT run_id, COALESCE(holder, ''), token,
                COALESCE((extract(epoch FROM lease_until) * 1000)::bigint, 0)
         FROM workflow_queue WHERE token > 0;
     ALTER TABLE workflow_queue
         DROP CONSTRAINT workflow_queue_state_check,
         DROP COLUMN holder,
         DROP COLUMN token,
         DROP COLUMN lease_until,
         ADD COLUMN decision TEXT,
         ADD COLUMN outcome TEXT,
         ADD CONSTRAINT workflow_queue_state_check
             CHECK (state IN ('queued', 'claimed', 'suspended', 'done'));",
    // 4: operators' revocations of leases (`Executor::revoke`), kept beside
    // the records so that a run resumed anywhere applies them again; in the
    // order they were kept.
    "CREATE TABLE workflow_revocations (
         run_id BIGINT NOT NULL,
         idx BIGINT NOT NULL,
         revocation TEXT NOT NULL,
         PRIMARY KEY (run_id, idx)
     );",
];

/// The tables the migrations create, besides the version table: found
/// without a version, they are not ours to touch.
const TABLES: &[&str] = &[
    "workflow_records",
    "workflow_heads",
    "workflow_tool_calls",
    "workflow_queue",
    "workflow_leases",
    "workflow_revocations",
];

/// Serializes the check among processes connecting at once
/// (`pg_advisory_xact_lock`, released with the transaction).
const LOCK_KEY: i64 = 0x776f_726b_666c_6f77; // "workflow"

fn storage(e: postgres::Error) -> OpenError {
    OpenError::Storage(describe(&e))
}

/// What `check` may do to the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Create the tables in an empty database, migrate an older one.
    Create,
    /// Change nothing: an empty or older database is refused.
    ReadOnly,
}

/// Checks the schema version, creating or migrating the tables when the
/// database is empty or older (in [`Mode::Create`]), in one transaction. A
/// newer or unknown schema is refused and the transaction rolled back:
/// nothing is altered.
pub(crate) fn check(client: &mut Client, mode: Mode) -> Result<(), OpenError> {
    let mut tx = client.transaction().map_err(storage)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&LOCK_KEY])
        .map_err(storage)?;
    let versioned: bool = tx
        .query_one(
            "SELECT to_regclass('workflow_schema_version') IS NOT NULL",
            &[],
        )
        .map_err(storage)?
        .get(0);
    let found = if versioned {
        let rows = tx
            .query("SELECT version FROM workflow_schema_version", &[])
            .map_err(|e| OpenError::UnknownSchema {
                found: format!("an unreadable version table: {}", describe(&e)),
                supported: SCHEMA_VERSION,
            })?;
        match rows.as_slice() {
            [row] => row
                .try_get::<_, i64>(0)
                .map_err(|e| OpenError::UnknownSchema {
                    found: format!("an unreadable version: {}", describe(&e)),
                    supported: SCHEMA_VERSION,
                })?,
            rows => {
                return Err(OpenError::UnknownSchema {
                    found: format!("{} version rows instead of one", rows.len()),
                    supported: SCHEMA_VERSION,
                });
            }
        }
    } else {
        let mut present = Vec::new();
        for table in TABLES {
            let exists: bool = tx
                .query_one("SELECT to_regclass($1) IS NOT NULL", &[table])
                .map_err(storage)?
                .get(0);
            if exists {
                present.push(*table);
            }
        }
        if !present.is_empty() {
            return Err(OpenError::UnknownSchema {
                found: format!("table(s) {} without a version", present.join(", ")),
                supported: SCHEMA_VERSION,
            });
        }
        0
    };
    if found > SCHEMA_VERSION {
        return Err(OpenError::NewerSchema {
            found,
            supported: SCHEMA_VERSION,
        });
    }
    if found < 0 || (versioned && found == 0) {
        return Err(OpenError::UnknownSchema {
            found: format!("version {found}"),
            supported: SCHEMA_VERSION,
        });
    }
    if found == SCHEMA_VERSION {
        return Ok(());
    }
    if mode == Mode::ReadOnly {
        return Err(if found == 0 {
            OpenError::NoLedger
        } else {
            OpenError::OlderSchema {
                found,
                supported: SCHEMA_VERSION,
            }
        });
    }
    for migration in &MIGRATIONS[found as usize..] {
        tx.batch_execute(migration).map_err(storage)?;
    }
    if versioned {
        tx.execute(
            "UPDATE workflow_schema_version SET version = $1",
            &[&SCHEMA_VERSION],
        )
        .map_err(storage)?;
    } else {
        tx.batch_execute("CREATE TABLE workflow_schema_version (version BIGINT NOT NULL)")
            .map_err(storage)?;
        tx.execute(
            "INSERT INTO workflow_schema_version (version) VALUES ($1)",
            &[&SCHEMA_VERSION],
        )
        .map_err(storage)?;
    }
    tx.commit().map_err(storage)
}
