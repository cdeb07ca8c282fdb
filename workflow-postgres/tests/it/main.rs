//! Tests against a throwaway PostgreSQL cluster of their own (`cluster`),
//! started and stopped by each test.

mod chaos;
mod cli;
mod cluster;
mod harness;
mod ledger;
mod queue;
mod scale;
mod schema;
mod worker;
