//! Complete, runnable workflows. The binaries in this package's `examples`
//! folder run them; the workflows themselves live here so tests and
//! benchmarks can use them too.

pub mod campaign;
mod campaign_tamper;
pub mod deploy_canaries;
pub mod deploy_workflow;
pub mod fanout_bench;
pub mod fanout_relay;
pub mod faults;
pub mod hand_written;
pub mod loop_bench;
pub mod model_tools;
pub mod model_triage;
pub mod parallel_review;
pub mod payment;
pub mod relay;
pub mod ticket_triage;
pub mod writer_reviewer;
