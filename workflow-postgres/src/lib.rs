//! A [`Ledger`](workflow_core::ledger::Ledger) on PostgreSQL: the transfer
//! records, their hash chain and heads, and the tool-call journal of
//! `workflow-core` in a database that many processes and machines share.
//!
//! ```no_run
//! use std::sync::Arc;
//! use workflow_postgres::PostgresLedger;
//!
//! let ledger = Arc::new(PostgresLedger::connect("postgres://app@db.internal/ledger")?);
//! // `Executor::with_ledger(ledger)` / `Workflow::with_ledger(ledger)`, as with SQLite.
//! # Ok::<(), workflow_postgres::OpenError>(())
//! ```
//!
//! # Design
//!
//! The `Ledger` trait is synchronous, and the executor calls it from inside
//! its tokio tasks, on a multi-thread or a current-thread runtime; the CLI
//! calls it from plain synchronous code. An async client cannot be driven
//! there (`block_on` inside a runtime panics, and `block_in_place` panics on
//! a current-thread runtime). So each [`PostgresLedger`] owns **one
//! dedicated thread** holding the connection, and every call is sent to it
//! over a channel and waits for the answer. The caller blocks its thread for
//! the round trip, exactly as an append to `SqliteLedger` blocks it for the
//! commit; no runtime is ever entered from inside another, whatever flavour
//! (or none) the caller runs. A transfer is still durable before its
//! receiver works: `append` returns once PostgreSQL has committed.
//!
//! The client is [`postgres`], the synchronous face of `tokio-postgres`
//! (both by the same maintainer, the most used PostgreSQL client in Rust).
//! It runs its own small runtime on the dedicated thread, where no other
//! runtime lives. `sqlx` was not chosen: it is async only (the same thread
//! would be needed) and much heavier to build; `deadpool-postgres` pools
//! async connections, which one sequential ledger connection does not need
//! (run several ledgers for parallel commits).
//!
//! # Leases and the work queue
//!
//! A run's lease and fencing token mean what they mean everywhere in
//! `workflow-core` ([`Lease`](workflow_core::ledger::Lease)): the ledger
//! implements `claim`, `append_leased`, `append_tool_call_leased`, `renew`
//! and `release` with core's own rules (`decide_claim`, `decide_write`)
//! over a `workflow_leases` row locked in each transaction, on the server's
//! clock. The work queue ([`PostgresLedger::submit`],
//! [`claim_next`](PostgresLedger::claim_next),
//! [`settle`](PostgresLedger::settle), [`decide`](PostgresLedger::decide))
//! hands out those same leases.
//!
//! # Schema
//!
//! The tables are prefixed `workflow_` so that the ledger can live in an
//! application's own database. The schema is versioned
//! ([`SCHEMA_VERSION`], table `workflow_schema_version`) and checked on
//! every [`connect`](PostgresLedger::connect): an empty database is given
//! the current version, an older one is migrated in one transaction, and a
//! newer or unknown one is refused with [`OpenError`] naming both versions,
//! with nothing altered. [`PostgresLedger::connect_read_only`] (for
//! commands that only read) never creates or migrates anything, and its
//! session refuses writes.

mod connection;
mod lease;
mod ledger;
mod listen;
mod queue;
mod schema;
mod worker;

pub use ledger::PostgresLedger;
pub use queue::{CHANNEL, Claimed, QueueCounts, Settle};
pub use schema::SCHEMA_VERSION;
pub use worker::{Work, Worker, WorkerEvent, WorkerSummary};

/// Why a ledger could not be opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    /// The connection string is not one PostgreSQL accepts.
    #[error("invalid PostgreSQL connection string: {0}")]
    Config(String),
    /// The server could not be reached or refused the connection.
    #[error("cannot connect to PostgreSQL: {0}")]
    Connect(String),
    /// The database holds a ledger written by a newer version of this
    /// library. Nothing was changed.
    #[error(
        "the database holds ledger schema version {found}, newer than version {supported} that this library reads; nothing was changed"
    )]
    NewerSchema {
        /// The version stored in the database.
        found: i64,
        /// The newest version this library knows.
        supported: i64,
    },
    /// The database holds something this library did not write (ledger
    /// tables without a version, or a version row it cannot read).
    /// Nothing was changed.
    #[error(
        "the database holds an unknown ledger schema ({found}); this library reads versions 1 to {supported}; nothing was changed"
    )]
    UnknownSchema {
        /// What was found instead of a known version.
        found: String,
        /// The newest version this library knows.
        supported: i64,
    },
    /// A read-only connection found no ledger in the database.
    #[error("the database holds no ledger (no workflow_* tables); nothing was changed")]
    NoLedger,
    /// A read-only connection found an older schema, which only a
    /// read-write [`connect`](PostgresLedger::connect) migrates.
    #[error(
        "the database holds ledger schema version {found}, older than version {supported}; connect read-write once to migrate it; nothing was changed"
    )]
    OlderSchema {
        /// The version stored in the database.
        found: i64,
        /// The version this library writes.
        supported: i64,
    },
    /// A statement failed while the schema was checked or created.
    #[error("PostgreSQL failed while checking the ledger schema: {0}")]
    Storage(String),
}
