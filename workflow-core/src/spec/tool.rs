//! What a tool declares and what its calls leave behind: its effect and
//! fallback, the fail-fast rule for its output (`FailFast`), and the record of
//! each call.

use crate::spec::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};

/// What a tool does to the world.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    /// Reads only. (The `Default` of this type, for hand-written tools;
    /// `#[tool]` has no default: every tool declares its effect.)
    #[default]
    Read,
    /// Changes state; needs an authority, so it has exactly one owner. Can
    /// have a guard checked before it acts (`#[tool(guard = path)]`).
    /// Published with MCP's `destructiveHint: true`: MCP's `false` promises
    /// purely additive updates, which a write is not known to make.
    Write,
    /// Changes state in a way that cannot be undone (a delete, a drop, a
    /// payment that cannot be refunded); needs an authority, can have a
    /// guard, and is published with MCP's `destructiveHint: true` (and
    /// `"workflow/effect": "destructive"` under `_meta`).
    Destructive,
}

/// What happens once a tool call has failed (after its retries).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Then {
    /// The run stops with [`RunError::ToolFailed`](crate::RunError::ToolFailed)
    /// at the end of the turn, whatever the agent does with the error: a bad
    /// result never reaches the next agent (the default).
    #[default]
    Abort,
    /// The run is suspended for a person's decision at the end of the turn.
    Escalate,
}

/// A tool's declared fallback policy: `#[tool(retries = 2, backoff_ms = 100, then = escalate)]`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Fallback {
    /// Retries of a transient failure ([`ToolErrorKind::is_transient`](crate::ToolErrorKind::is_transient)).
    pub retries: u32,
    /// The wait before the first retry; doubled before each next one.
    pub backoff_ms: u64,
    /// What a failure that is left leads to.
    pub then: Then,
}

impl Fallback {
    /// No retry; a failure aborts the run.
    pub const ABORT: Fallback = Fallback {
        retries: 0,
        backoff_ms: 0,
        then: Then::Abort,
    };
}

/// Why a tool's result is not a usable value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unusable {
    /// Nothing where something was expected.
    Empty(String),
    /// Only part of the answer (a page of more).
    Partial(String),
    /// A non-success status.
    Status(u16, String),
}

/// The fail-fast rule of a tool's output: says when a value is empty,
/// partial or a failure status, so that it becomes a typed
/// [`ToolError`] and never a value for the next agent.
///
/// Implemented for the standard containers (empty is [`Unusable::Empty`])
/// and for `Option` (`None` is empty). For your own output types, say what
/// makes one unusable; an empty `impl FailFast for MyType {}` accepts every
/// value, on purpose and in writing.
///
/// ```
/// use workflow_core::{FailFast, Unusable};
/// struct Page { items: Vec<u32>, next: Option<u32> }
/// impl FailFast for Page {
///     fn fail_fast(&self) -> Result<(), Unusable> {
///         if self.next.is_some() {
///             return Err(Unusable::Partial("more pages follow".into()));
///         }
///         self.items.fail_fast()
///     }
/// }
/// assert!(Page { items: vec![1], next: Some(2) }.fail_fast().is_err());
/// ```
#[diagnostic::on_unimplemented(
    message = "tool output `{Self}` does not say when it is empty, partial or a failure",
    label = "the output of a `#[tool]` must implement `FailFast`",
    note = "implement `workflow_core::FailFast` for `{Self}` (an empty `impl FailFast for {Self} {{}}` accepts every value)"
)]
pub trait FailFast {
    /// `Err` when the value must not be used as a result.
    fn fail_fast(&self) -> Result<(), Unusable> {
        Ok(())
    }
}

macro_rules! complete_always {
    ($($t:ty),*) => { $(impl FailFast for $t {})* };
}
complete_always!(
    (),
    bool,
    char,
    u8,
    u16,
    u32,
    u64,
    u128,
    usize,
    i8,
    i16,
    i32,
    i64,
    i128,
    isize,
    f32,
    f64
);

macro_rules! empty_is_unusable {
    ($($t:ident<$($p:ident),*>),*) => {$(
        impl<$($p),*> FailFast for $t<$($p),*> {
            fn fail_fast(&self) -> Result<(), Unusable> {
                if self.is_empty() {
                    Err(Unusable::Empty(concat!("an empty ", stringify!($t)).into()))
                } else {
                    Ok(())
                }
            }
        }
    )*};
}
empty_is_unusable!(Vec<T>, VecDeque<T>, HashMap<K, V>, BTreeMap<K, V>, HashSet<T>, BTreeSet<T>);

impl FailFast for String {
    fn fail_fast(&self) -> Result<(), Unusable> {
        if self.is_empty() {
            Err(Unusable::Empty("an empty string".into()))
        } else {
            Ok(())
        }
    }
}

impl<T: FailFast> FailFast for Option<T> {
    fn fail_fast(&self) -> Result<(), Unusable> {
        match self {
            None => Err(Unusable::Empty("no value (None)".into())),
            Some(v) => v.fail_fast(),
        }
    }
}

impl<T: FailFast + ?Sized> FailFast for Box<T> {
    fn fail_fast(&self) -> Result<(), Unusable> {
        (**self).fail_fast()
    }
}

impl<T: FailFast + ?Sized> FailFast for std::sync::Arc<T> {
    fn fail_fast(&self) -> Result<(), Unusable> {
        (**self).fail_fast()
    }
}

impl FailFast for serde_json::Value {
    fn fail_fast(&self) -> Result<(), Unusable> {
        if self.is_null() {
            Err(Unusable::Empty("null".into()))
        } else {
            Ok(())
        }
    }
}

/// A tool output for which "nothing found" is a valid answer: a search with
/// no hits, a status page with no incidents. Return `EmptyOk<T>` from a
/// `#[tool]` and an empty `T` (an empty list, map or string, `None`) is a
/// result, recorded like any other; a partial result or a failure status of
/// `T` still fails fast.
///
/// Fail-fast stays the default: an output type that does not say so is
/// refused when empty. Saying it is a choice written in the tool's
/// signature, where a reader sees it.
///
/// On the wire and in its schema, `EmptyOk<T>` is `T` itself.
///
/// ```
/// use workflow_core::{EmptyOk, FailFast};
/// let none: EmptyOk<Vec<String>> = EmptyOk(vec![]);
/// assert!(none.fail_fast().is_ok());
/// assert!(Vec::<String>::new().fail_fast().is_err());
/// assert!(none.is_empty()); // it derefs to the `Vec`
/// ```
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    JsonSchema,
)]
#[serde(transparent)]
#[schemars(transparent)]
pub struct EmptyOk<T>(pub T);

impl<T> EmptyOk<T> {
    /// The value.
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> From<T> for EmptyOk<T> {
    fn from(value: T) -> Self {
        EmptyOk(value)
    }
}

impl<T> std::ops::Deref for EmptyOk<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> std::ops::DerefMut for EmptyOk<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

impl<T: FailFast> FailFast for EmptyOk<T> {
    /// `T`'s rule, but for an empty value, which is accepted.
    fn fail_fast(&self) -> Result<(), Unusable> {
        match self.0.fail_fast() {
            Err(Unusable::Empty(_)) => Ok(()),
            other => other,
        }
    }
}

impl Unusable {
    /// The typed error of tool `tool` for this result.
    pub fn into_error(self, tool: &'static str) -> ToolError {
        match self {
            Unusable::Empty(m) => ToolError::empty(
                tool,
                format!(
                    "{m}; when no result is a valid answer of this tool, return `EmptyOk<..>` from it"
                ),
            ),
            Unusable::Partial(m) => ToolError::partial(tool, m),
            Unusable::Status(code, m) => ToolError::status(tool, code, m),
        }
    }
}

/// One tool call as the executor recorded it. `(run, input_seq, index)` of
/// its turn identifies the call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolCallRecord {
    /// The tool.
    pub tool: Cow<'static, str>,
    /// The call's position in its turn, from 0.
    pub index: u32,
    /// The arguments, as JSON text.
    pub arguments: String,
    /// What came back.
    pub outcome: ToolOutcome,
    /// Attempts made (1 without retries).
    pub attempts: u32,
    /// Microseconds from the first attempt to the outcome.
    pub duration_us: u64,
    /// Audit mode only: why enforcement would have refused the call (a
    /// tool outside the turn's scope), which was made anyway. Absent
    /// otherwise: records and hashes without it are unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit: Option<String>,
}

/// The outcome of a recorded tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "status", rename_all = "snake_case", deny_unknown_fields)]
pub enum ToolOutcome {
    /// A usable result.
    Ok {
        /// The result, as JSON text.
        result: String,
        /// The SHA-256 of `result`, hex-encoded.
        digest: String,
    },
    /// A typed failure: the agent got the error, never a value.
    Failed {
        /// The error.
        error: ToolError,
    },
}
