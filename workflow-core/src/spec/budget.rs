//! Budgets of a run: tokens, cost and tool calls, charged by agents and
//! tools and enforced with a typed error when one is used up.

use std::borrow::Cow;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a turn (or a whole run) charged.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Cost in millionths of the account's currency unit.
    pub cost_micros: u64,
    /// Tool calls made.
    pub tool_calls: u64,
}

impl Usage {
    /// Usage of `input` prompt and `output` completion tokens.
    pub fn tokens(input: u64, output: u64) -> Self {
        Usage {
            input_tokens: input,
            output_tokens: output,
            ..Usage::default()
        }
    }

    /// The same usage, costing `micros` too.
    pub fn with_cost_micros(mut self, micros: u64) -> Self {
        self.cost_micros = micros;
        self
    }

    /// All tokens, prompt and completion.
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }

    /// Whether nothing was charged.
    pub fn is_zero(&self) -> bool {
        *self == Usage::default()
    }

    pub(crate) fn add(&mut self, other: &Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cost_micros = self.cost_micros.saturating_add(other.cost_micros);
        self.tool_calls = self.tool_calls.saturating_add(other.tool_calls);
    }
}

/// The limits of one run. A limit left `None` is not enforced.
///
/// ```
/// use workflow_core::Budget;
/// let budget = Budget::default().max_tokens(20_000).max_tool_calls(12);
/// assert_eq!(budget.tokens, Some(20_000));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    /// Tokens (prompt and completion) the run may use.
    pub tokens: Option<u64>,
    /// Cost in micros the run may spend.
    pub cost_micros: Option<u64>,
    /// Tool calls the run may make.
    pub tool_calls: Option<u64>,
}

impl Budget {
    /// At most `n` tokens.
    pub fn max_tokens(mut self, n: u64) -> Self {
        self.tokens = Some(n);
        self
    }

    /// At most `n` micros of cost.
    pub fn max_cost_micros(mut self, n: u64) -> Self {
        self.cost_micros = Some(n);
        self
    }

    /// At most `n` tool calls.
    pub fn max_tool_calls(mut self, n: u64) -> Self {
        self.tool_calls = Some(n);
        self
    }

    /// The first budget that `spent` exceeds (`exhausted_at_limit`: also
    /// one it has just reached), as `(name, limit, spent)`.
    pub(crate) fn over(
        &self,
        spent: &Usage,
        at_limit: bool,
    ) -> Option<(Cow<'static, str>, u64, u64)> {
        let checks = [
            ("tokens", self.tokens, spent.total_tokens()),
            ("cost_micros", self.cost_micros, spent.cost_micros),
            ("tool_calls", self.tool_calls, spent.tool_calls),
        ];
        checks.into_iter().find_map(|(name, limit, spent)| {
            let limit = limit?;
            let over = if at_limit {
                spent >= limit
            } else {
                spent > limit
            };
            over.then_some((Cow::Borrowed(name), limit, spent))
        })
    }
}

/// A budget used up during a turn: returned by
/// [`Context::charge`](crate::Context::charge); with `?` it ends the turn,
/// and the run stops with [`RunError::BudgetExhausted`](crate::RunError::BudgetExhausted)
/// whatever the agent does with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{budget} budget of {limit} used up ({spent} spent)")]
pub struct BudgetExhausted {
    /// Which budget.
    pub budget: Cow<'static, str>,
    /// Its limit.
    pub limit: u64,
    /// What was spent.
    pub spent: u64,
}

impl From<BudgetExhausted> for crate::spec::Reject {
    fn from(e: BudgetExhausted) -> Self {
        crate::spec::Reject::because(e.to_string())
    }
}
