//! Parallel branches: what a fan-out is (`Fork`), what each branch ended
//! with (`Branch<T>`, what the join receives per branch), and where a
//! record stands in a fan-out (`Lineage`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fmt;

use crate::spec::RejectReason;

/// A fan-out as declared: the agent whose turn starts the branches, the
/// edges each branch takes, and the edge of the join's transfer.
///
/// The fan-out agent hands each branch its input over `start`; the branch
/// agent hands its output over `outcome` to the join agent (a branch of
/// more than one turn hands on inside itself first, over edges its
/// generated turn names); the join agent then receives one transfer, over
/// `join`, holding every branch's outcome.
#[derive(Debug, Clone, Copy)]
pub struct Fork {
    /// The agent whose turn starts the branches (an index of
    /// [`Graph::agents`](crate::Graph::agents)).
    pub from: u16,
    /// The branches, in declaration order (the join's fields' order).
    pub branches: &'static [ForkBranch],
    /// The edge from the fan-out agent to the join agent: the transfer
    /// carrying every branch's outcome.
    pub join: u16,
}

/// What a fan-out is, for the exports: its [`Fork`], whether it is a map
/// (`map(worker, max = N)`, its bound) or `parallel(..)`, and its join's
/// policy.
#[derive(Debug, Clone, Copy)]
pub struct ForkInfo {
    /// The fan-out's agent and edges.
    pub fork: &'static Fork,
    /// `Some(max)` for a map: one branch of its one receiver per item, at
    /// most `max` items; `None` for `parallel(..)`.
    pub map: Option<u32>,
    /// The join's policy.
    pub policy: JoinPolicy,
}

/// When a join goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum JoinPolicy {
    /// Once every branch has ended (the default).
    All,
    /// Once this many branches are done (`quorum = N`); the branches still
    /// running are cancelled, their outcome `Cancelled`.
    Quorum(u32),
}

/// One branch of a [`Fork`].
#[derive(Debug, Clone, Copy)]
pub struct ForkBranch {
    /// The edge from the fan-out agent to the branch's agent.
    pub start: u16,
    /// The edge from the branch's agent to the join agent.
    pub outcome: u16,
}

/// What one branch of a fan-out ended with: what its join receives for it.
/// Never silently missing: a branch that did not hand on a value says why.
///
/// On the wire: `{"outcome": "done", "detail": <the value>}`,
/// `{"outcome": "rejected", "detail": {"reason": ..}}`, and so on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(
    tag = "outcome",
    content = "detail",
    rename_all = "snake_case",
    deny_unknown_fields
)]
pub enum Branch<T> {
    /// The branch's turn ran and handed on this value.
    Done(T),
    /// A check refused the branch: its receipt (the body never ran), or the
    /// checks on what it handed on (the value is in the record, not here).
    Rejected {
        /// Why.
        reason: RejectReason,
    },
    /// The branch's turn failed: its body's error, a tool failure, a broken
    /// post-condition, a spent budget, or an escalation (a person's decision
    /// cannot be waited for inside a fan-out).
    Failed {
        /// What went wrong, as the record says it.
        error: String,
    },
    /// The branch's agent ran past its own timeout (`timeout_ms`).
    TimedOut {
        /// The timeout.
        after_ms: u64,
    },
    /// The branch was cut before it ended: the run's deadline passed while it
    /// ran.
    Cancelled {
        /// Why.
        reason: String,
    },
}

impl<T> Branch<T> {
    /// The value, when the branch is `Done`.
    pub fn done(&self) -> Option<&T> {
        match self {
            Branch::Done(value) => Some(value),
            _ => None,
        }
    }

    /// Whether the branch handed on a value.
    pub fn is_done(&self) -> bool {
        matches!(self, Branch::Done(_))
    }

    /// The outcome's name as the wire spells it (`done`, `rejected`,
    /// `failed`, `timed_out`, `cancelled`).
    pub fn outcome(&self) -> &'static str {
        match self {
            Branch::Done(_) => "done",
            Branch::Rejected { .. } => "rejected",
            Branch::Failed { .. } => "failed",
            Branch::TimedOut { .. } => "timed_out",
            Branch::Cancelled { .. } => "cancelled",
        }
    }
}

impl Branch<std::convert::Infallible> {
    /// An outcome that holds no value (every one but `Done`, which cannot
    /// be built with no value), as the outcome of a branch of any type.
    pub fn retyped<T>(self) -> Branch<T> {
        match self {
            Branch::Done(never) => match never {},
            Branch::Rejected { reason } => Branch::Rejected { reason },
            Branch::Failed { error } => Branch::Failed { error },
            Branch::TimedOut { after_ms } => Branch::TimedOut { after_ms },
            Branch::Cancelled { reason } => Branch::Cancelled { reason },
        }
    }
}

impl<T> fmt::Display for Branch<T> {
    /// `done`, or the outcome with why (`rejected: hop cap of 4 reached`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Branch::Done(_) => f.write_str("done"),
            Branch::Rejected { reason } => write!(f, "rejected: {reason}"),
            Branch::Failed { error } => write!(f, "failed: {error}"),
            Branch::TimedOut { after_ms } => write!(f, "timed out after {after_ms} ms"),
            Branch::Cancelled { reason } => write!(f, "cancelled: {reason}"),
        }
    }
}

/// Where a record stands in a fan-out: the branch it belongs to and the
/// record it follows (its parent), or the join. Records stay in one chain,
/// in the order they were committed; the lineage draws the branches over it.
///
/// A fan-out is identified by `fork`, the sequence number of the record the
/// fan-out agent's turn worked on; a branch by `fork` and its index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "lineage", rename_all = "snake_case", deny_unknown_fields)]
pub enum Lineage {
    /// The transfer that starts branch `branch` (the fan-out agent's handoff
    /// to the branch's agent); its parent is record `fork`.
    Start {
        /// The record the fan-out agent's turn worked on.
        fork: u32,
        /// The branch's index in the fan-out.
        branch: u16,
    },
    /// A handoff inside branch `branch`, from one of its turns to the
    /// branch's next agent (a branch of more than one turn): the record that
    /// turn worked on is `parent`, the next turn works on this one.
    Step {
        /// The record the fan-out agent's turn worked on.
        fork: u32,
        /// The branch's index in the fan-out.
        branch: u16,
        /// The record the handing turn worked on (the branch's start or an
        /// earlier step).
        parent: u32,
    },
    /// What branch `branch`'s last turn ended with: its output handed to the
    /// join, or its input again with a `turn_failed` receipt.
    Outcome {
        /// The record the fan-out agent's turn worked on.
        fork: u32,
        /// The branch's index in the fan-out.
        branch: u16,
        /// The record the branch's last turn worked on (its start, or its
        /// last step).
        parent: u32,
    },
    /// The join's transfer: every branch's outcome in one payload.
    Join {
        /// The record the fan-out agent's turn worked on.
        fork: u32,
        /// Each branch's last record, in branch order: its outcome, or its
        /// start when its receipt refused it.
        heads: Vec<u32>,
    },
}

/// How many fan-outs deep a lineage is followed out (nested fan-outs go one
/// deep; this bounds a walk over lineages that loop).
const NESTING: u8 = 8;

impl Lineage {
    /// The fan-out the record belongs to.
    pub fn fork(&self) -> u32 {
        match self {
            Lineage::Start { fork, .. }
            | Lineage::Step { fork, .. }
            | Lineage::Outcome { fork, .. }
            | Lineage::Join { fork, .. } => *fork,
        }
    }

    /// Whether the record is inside a fan-out: a branch's start, step or
    /// outcome, or the join of a fan-out that is itself inside a branch
    /// (`of` gives a record's lineage by its sequence number).
    pub fn inside<'a>(&self, of: &impl Fn(u32) -> Option<&'a Lineage>) -> bool {
        self.inside_at(of, NESTING)
    }

    fn inside_at<'a>(&self, of: &impl Fn(u32) -> Option<&'a Lineage>, depth: u8) -> bool {
        match self {
            Lineage::Join { fork, .. } => of(*fork).is_some_and(|l| l.in_branch(of, depth)),
            _ => true,
        }
    }

    /// Whether the record is a transfer a branch's turn works on: a start,
    /// a step, or a join inside a branch (`depth`: how many more fan-outs
    /// out to look, against lineages that loop).
    fn in_branch<'a>(&self, of: &impl Fn(u32) -> Option<&'a Lineage>, depth: u8) -> bool {
        match self {
            Lineage::Start { .. } | Lineage::Step { .. } => true,
            Lineage::Join { .. } => depth > 0 && self.inside_at(of, depth - 1),
            Lineage::Outcome { .. } => false,
        }
    }

    /// The outermost fan-out the record belongs to: its own, or, for a
    /// fan-out inside a branch, the fan-out that branch belongs to (`of`
    /// gives a record's lineage by its sequence number).
    pub fn outermost<'a>(&self, of: &impl Fn(u32) -> Option<&'a Lineage>) -> u32 {
        let mut fork = self.fork();
        for depth in (0..NESTING).rev() {
            match of(fork) {
                Some(l) if l.in_branch(of, depth) => fork = l.fork(),
                _ => break,
            }
        }
        fork
    }

    /// The records this one follows: `fork` for a start, the record the
    /// handing turn worked on for a step or an outcome, every branch's head
    /// for the join.
    pub fn parents(&self) -> Vec<u32> {
        match self {
            Lineage::Start { fork, .. } => vec![*fork],
            Lineage::Step { parent, .. } | Lineage::Outcome { parent, .. } => vec![*parent],
            Lineage::Join { heads, .. } => heads.clone(),
        }
    }
}

impl fmt::Display for Lineage {
    /// `branch 1 of #3`, `step of branch 1 of #3 (after #5)`, `outcome of
    /// branch 1 of #3 (after #9)`,
    /// `join of #3 (#7, #8)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Lineage::Start { fork, branch } => write!(f, "branch {branch} of #{fork}"),
            Lineage::Step {
                fork,
                branch,
                parent,
            } => write!(f, "step of branch {branch} of #{fork} (after #{parent})"),
            Lineage::Outcome {
                fork,
                branch,
                parent,
            } => write!(f, "outcome of branch {branch} of #{fork} (after #{parent})"),
            Lineage::Join { fork, heads } => {
                let heads: Vec<String> = heads.iter().map(|h| format!("#{h}")).collect();
                write!(f, "join of #{fork} ({})", heads.join(", "))
            }
        }
    }
}
