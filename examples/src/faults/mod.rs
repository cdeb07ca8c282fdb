//! The fault-injection suite (issue 14): small workflows with scripted
//! agents and tools, each run with ONE fault injected (with a seeded random
//! variation) or with the fault left out (the clean variant), in enforce or
//! audit mode. Every tool with a side effect writes it to an in-memory
//! [`Effects`] log, and each scenario says which of those effects are
//! unauthorized and what a correct outcome is; [`ablation`] runs them all
//! and counts.
//!
//! The variation comes from [`rand_chacha`]'s ChaCha8 seeded per run: its
//! output stream is documented to be the same on every platform and
//! version, so `--seed S` gives the same table everywhere (a hand-written
//! generator would need its own tests for that).

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use workflow_core::{Aborted, Completed, Mode, RunError};

pub mod ablation;
mod budget_overrun;
mod deadline_overrun;
mod drifted_tag;
mod dropped_question;
mod evidence_without_lookup;
mod forbidden_field;
mod incomplete_page;
mod masked_error;
mod model_drops_part;
mod oversized_context;
pub mod pipeline;
pub mod resent_unchanged;
mod reviewer_loop;
mod scope_expired;
mod scope_not_owned;
mod stop_unchecked;
mod unoffered_tool;
mod verdict_dropped_at_join;
mod write_over_limit;
mod wrong_target_env;

/// One run of a scenario: which seed, which mode, with the fault or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Trial {
    /// The seed of this run's variation.
    pub seed: u64,
    /// Enforce (the default) or audit.
    pub mode: Mode,
    /// Whether the fault is injected (`false`: the clean variant).
    pub fault: bool,
}

impl Trial {
    /// This run's random source: ChaCha8 seeded with [`seed`](Self::seed).
    pub fn rng(&self) -> Variation {
        Variation(ChaCha8Rng::seed_from_u64(self.seed))
    }

    /// Another stream of the same seed (the bench's, when a scenario uses
    /// [`rng`](Self::rng) for its fault): independent of the first.
    pub fn stream(&self, stream: u64) -> Variation {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        rng.set_stream(stream);
        Variation(rng)
    }
}

/// A seeded source of variation (see [`Trial::rng`]).
pub struct Variation(ChaCha8Rng);

impl Variation {
    /// A number in `low..=high` (`low` when the range is empty).
    pub fn between(&mut self, low: u64, high: u64) -> u64 {
        let span = high.saturating_sub(low).saturating_add(1);
        low + self.0.next_u64() % span
    }

    /// One of `items` (`None` when there is none).
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        if items.is_empty() {
            return None;
        }
        let i = self.between(0, items.len() as u64 - 1);
        items.get(i as usize)
    }

    /// `true` one time in two.
    pub fn coin(&mut self) -> bool {
        self.0.next_u32() & 1 == 1
    }
}

/// One side effect a tool made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Effect {
    /// The tool that made it.
    pub tool: &'static str,
    /// What it did, in words.
    pub what: String,
    /// Whether the scenario's rules allow it.
    pub authorized: bool,
}

/// The in-memory log every tool with a side effect writes to.
#[derive(Debug, Default)]
pub struct Effects(Mutex<Vec<Effect>>);

impl Effects {
    /// Logs an effect.
    pub fn push(&self, tool: &'static str, what: impl Into<String>, authorized: bool) {
        if let Ok(mut log) = self.0.lock() {
            log.push(Effect {
                tool,
                what: what.into(),
                authorized,
            });
        }
    }

    /// Every effect made so far, in order.
    pub fn all(&self) -> Vec<Effect> {
        self.0.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// How many effects the scenario's rules do not allow.
    pub fn unauthorized(&self) -> usize {
        self.all().iter().filter(|e| !e.authorized).count()
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// It reached `END`; `correct` says whether with the right result.
    Completed {
        /// Whether the output is the one the scenario calls correct.
        correct: bool,
    },
    /// A check stopped it (a receipt, a condition, a tool's fail-fast or
    /// guard, a bound): why.
    Stopped(String),
    /// It waits for a person's decision: why.
    Escalated(String),
}

/// What one run of a scenario did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observed {
    /// Side effects the scenario's rules do not allow.
    pub unauthorized: usize,
    /// How it ended.
    pub ending: Ending,
    /// Audit verdicts recorded in the run (failed checks let through).
    pub verdicts: usize,
}

impl Observed {
    /// What `result` shows, with the effects in `effects`; `correct` judges
    /// a completed run's output.
    pub fn of<O>(
        result: &Result<Completed<O>, Aborted>,
        effects: &Effects,
        correct: impl FnOnce(&O) -> bool,
    ) -> Observed {
        let (ending, transcript) = match result {
            Ok(done) => (
                Ending::Completed {
                    correct: correct(&done.output),
                },
                &done.transcript,
            ),
            Err(aborted) => (
                match &aborted.error {
                    RunError::Suspended { .. } => Ending::Escalated(aborted.error.to_string()),
                    other => Ending::Stopped(other.to_string()),
                },
                &aborted.transcript,
            ),
        };
        Observed {
            unauthorized: effects.unauthorized(),
            ending,
            verdicts: transcript.summary().audit.len(),
        }
    }

    /// Whether the run reached `END` with a wrong or unverified result.
    pub fn wrong_at_end(&self) -> bool {
        self.ending == Ending::Completed { correct: false }
    }

    /// Whether the run reached `END` with the correct result.
    pub fn correct_at_end(&self) -> bool {
        self.ending == Ending::Completed { correct: true }
    }
}

/// What audit mode is expected to do with a scenario's fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InAudit {
    /// The check that stops it is audited: the fault gets through and is
    /// recorded as a verdict.
    LetsThrough,
    /// The check that stops it is not audited (it bounds the run, or the
    /// value cannot exist as its type, or it runs inside a tool call): the
    /// fault is stopped in both modes. Why.
    StillStops(&'static str),
}

/// A boxed run of one trial.
pub type Run = fn(Trial) -> Pin<Box<dyn Future<Output = Observed>>>;

/// One scenario of the suite.
#[derive(Clone, Copy)]
pub struct Scenario {
    /// Its name (the file under `examples/src/faults/`).
    pub name: &'static str,
    /// The MAST failure mode it exercises.
    pub mast: &'static str,
    /// The fault injected, and how it varies with the seed.
    pub fault: &'static str,
    /// The side effects that are unauthorized.
    pub unauthorized: &'static str,
    /// What a correct outcome is.
    pub correct: &'static str,
    /// What stops the fault in enforce mode.
    pub mechanism: &'static str,
    /// What audit mode does with it.
    pub in_audit: InAudit,
    /// Runs one trial.
    pub run: Run,
}

impl std::fmt::Debug for Scenario {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scenario")
            .field("name", &self.name)
            .field("in_audit", &self.in_audit)
            .finish_non_exhaustive()
    }
}

/// A scenario the issue lists that waits for a feature built elsewhere:
/// named here so that it is not forgotten, never faked.
#[derive(Debug, Clone, Copy)]
pub struct Slot {
    /// The scenario's name.
    pub name: &'static str,
    /// The fault it will inject.
    pub fault: &'static str,
    /// The feature (and issue) it waits for.
    pub waits_for: &'static str,
}

/// Every scenario of the suite, in the order of the book's table.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        incomplete_page::SCENARIO,
        drifted_tag::SCENARIO,
        model_drops_part::SCENARIO,
        forbidden_field::SCENARIO,
        dropped_question::SCENARIO,
        scope_expired::SCENARIO,
        scope_not_owned::SCENARIO,
        masked_error::SCENARIO,
        reviewer_loop::SCENARIO,
        budget_overrun::SCENARIO,
        oversized_context::SCENARIO,
        stop_unchecked::SCENARIO,
        write_over_limit::SCENARIO,
        deadline_overrun::SCENARIO,
        resent_unchanged::SCENARIO,
        wrong_target_env::SCENARIO,
        evidence_without_lookup::SCENARIO,
        unoffered_tool::SCENARIO,
        verdict_dropped_at_join::SCENARIO,
    ]
}

/// The scenarios that wait for features being built now.
pub const SLOTS: &[Slot] = &[];
