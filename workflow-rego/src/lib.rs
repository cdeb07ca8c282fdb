//! A Rego policy gate: rules, written by the people who own the risk, that
//! every transition of a run must pass.
//!
//! A [`Policy`] is one or more Rego modules plus optional JSON data. The
//! first module is `package workflow` and declares the rule `deny`, a set of
//! messages; [`Policy::evaluate`] computes `data.workflow.deny` for one
//! transition. An empty set allows the transition; each message in a
//! non-empty set is one reason to reject it.
//!
//! ```rego
//! package workflow
//!
//! deny contains msg if {
//!     input.payload.target_env != input.root.allowed_env
//!     msg := sprintf("target_env %v is not the pinned %v", [input.payload.target_env, input.root.allowed_env])
//! }
//! ```
//!
//! # The input
//!
//! The executor passes one JSON document per transition; this shape is the
//! contract with policy authors:
//!
//! ```text
//! {
//!   "workflow": "deploy",              // the workflow's name
//!   "run_id": 123,                     // the run
//!   "hop": 2,                          // agent turns completed before it
//!   "sender": "network",               // the agent handing off (`START`)
//!   "receiver": "terraform",           // the agent it hands off to (`END`)
//!   "payload_type": "TerraformPlan",   // the payload's Rust type name
//!   "contract": {                      // the handoff's contract parts (null
//!                                      // for a payload that is no handoff)
//!     "operation": {...}, "authority": {...}, "evidence": [...],
//!     "uncertainty": [...], "stop": {...}
//!   },
//!   "payload": {...},                  // the whole payload as JSON
//!   "root": {...}                      // the run's pinned root invariants as JSON
//! }
//! ```
//!
//! Data added with [`Policy::add_data`] is `data.*` (for example
//! `data.forbidden_jurisdictions`).
//!
//! # Failing closed
//!
//! A policy never allows by accident: a module that does not compile, a
//! first module outside `package workflow` or without a `deny` rule, a
//! `deny` that is not a set of strings, and an error while evaluating (a
//! builtin called with the wrong types, say) are all a [`PolicyError`], which
//! the executor turns into a rejection. Only a `deny` that is empty, or
//! undefined because no rule body held, allows.
//!
//! # As a gate
//!
//! A [`Policy`] is a [`workflow_core::Gate`]: give it to the executor with
//! `Executor::with_gate(Arc::new(policy))` and it is evaluated on every
//! transfer, a deny becoming a rejection that carries its messages.
//!
//! The interpreter is [regorus](https://docs.rs/regorus), pure Rust, no OPA
//! binary; the OPA builtin families that need more (regex, time, http,
//! yaml, ...) are not compiled in.

#![warn(missing_docs)]

mod policy;

pub use policy::{Policy, PolicyDecision, PolicyError, PolicyStage};

/// The book's chapter on Rego policies, its code blocks compiled and run as
/// doctests.
#[cfg(doctest)]
pub mod book {
    #[doc = include_str!("../../book/src/policy.md")]
    pub struct Policies;
}
