//! What a model call leaves behind: its typed error (`ModelError`) and its
//! record with the turn (`ModelCallRecord`).

use crate::spec::{BudgetExhausted, Usage};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::fmt;

/// A model call that did not give a usable value.
///
/// A reply that does not parse, match the schema, deserialize or pass a
/// contract rule is sent back for repair while repairs are left; the
/// other classes end the call at once.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[error("model call failed ({kind}): {message}{}", list(errors))]
pub struct ModelError {
    /// What class of failure.
    pub kind: ModelErrorKind,
    /// What went wrong.
    pub message: String,
    /// The validator's, deserializer's or contract rules' messages, one per
    /// problem (what a repair request feeds back).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
}

fn list(errors: &[String]) -> String {
    if errors.is_empty() {
        String::new()
    } else {
        format!(": {}", errors.join("; "))
    }
}

/// The class of a [`ModelError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ModelErrorKind {
    /// The request did not reach the model or the answer did not come back
    /// (connection refused, reset, an answer that is not a chat completion).
    Transport,
    /// The server answered with a non-success status.
    Status(u16),
    /// No answer within the backend's timeout.
    Timeout,
    /// The model refused to answer.
    Refusal,
    /// The reply is not JSON.
    MalformedJson,
    /// The reply is JSON that does not match the schema or does not
    /// deserialize (a missing contract part, an unknown field).
    SchemaMismatch,
    /// The reply deserializes but breaks a rule of the caller's
    /// ([`Generation::check`](crate::Generation::check)).
    ContractRule,
    /// Every repair was used and the last reply was still not usable (the
    /// message names the last class, `errors` are its errors).
    RetriesExhausted,
    /// The run's budget is used up: no further attempt is made.
    Budget,
    /// A scripted or recorded model has no reply for the request.
    NoReply,
    /// No model is attached to the run (`Executor::with_model`).
    NoModel,
    /// The backend cannot send the requested schema in the form its server
    /// takes (OpenAI's strict mode cannot express a map or a tuple): ask
    /// without strict mode, or change the type. Nothing was sent.
    UnsupportedSchema,
    /// The call was cut off before it ended: its turn timed out, or the
    /// step running it was dropped (recorded, never returned).
    Cancelled,
    /// In a tool loop: the model asked for a tool it was not offered (or
    /// one that does not exist). Refused before anything ran, and fed back.
    ToolNotOffered,
    /// In a tool loop: the model's arguments for a tool are not JSON or do
    /// not match the tool's input schema. Refused before the tool ran, and
    /// fed back with the validator's errors.
    ToolArguments,
    /// In a tool loop: the model still asked for tools at its last allowed
    /// step (`ToolLoop::max_steps`), so the loop ended without an answer.
    StepLimit,
    /// In a tool loop: a tool call failed under `then = abort` (an empty or
    /// partial result, a refusal of its guard or scope, the budget): the
    /// turn fails whatever the model would say next, so it is not asked.
    ToolFailed,
}

impl ModelErrorKind {
    /// Whether a reply of this class is sent back to the model with its
    /// errors: malformed JSON, a schema mismatch, a broken contract rule,
    /// and in a tool loop a request for a tool not offered or with bad
    /// arguments.
    pub fn is_repairable(self) -> bool {
        matches!(
            self,
            ModelErrorKind::MalformedJson
                | ModelErrorKind::SchemaMismatch
                | ModelErrorKind::ContractRule
                | ModelErrorKind::ToolNotOffered
                | ModelErrorKind::ToolArguments
        )
    }

    /// Whether a transport retry policy retries this failure: transport
    /// failures, timeouts, 429 and 5xx statuses.
    pub fn is_transient(self) -> bool {
        match self {
            ModelErrorKind::Transport | ModelErrorKind::Timeout => true,
            ModelErrorKind::Status(code) => code == 429 || code >= 500,
            _ => false,
        }
    }
}

impl fmt::Display for ModelErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelErrorKind::Transport => f.write_str("transport"),
            ModelErrorKind::Status(code) => write!(f, "status {code}"),
            ModelErrorKind::Timeout => f.write_str("timed out"),
            ModelErrorKind::Refusal => f.write_str("refusal"),
            ModelErrorKind::MalformedJson => f.write_str("malformed JSON"),
            ModelErrorKind::SchemaMismatch => f.write_str("schema mismatch"),
            ModelErrorKind::ContractRule => f.write_str("contract rule"),
            ModelErrorKind::RetriesExhausted => f.write_str("retries exhausted"),
            ModelErrorKind::Budget => f.write_str("budget exhausted"),
            ModelErrorKind::NoReply => f.write_str("no reply"),
            ModelErrorKind::NoModel => f.write_str("no model"),
            ModelErrorKind::UnsupportedSchema => f.write_str("unsupported schema"),
            ModelErrorKind::Cancelled => f.write_str("cancelled"),
            ModelErrorKind::ToolNotOffered => f.write_str("tool not offered"),
            ModelErrorKind::ToolArguments => f.write_str("bad tool arguments"),
            ModelErrorKind::StepLimit => f.write_str("step limit reached"),
            ModelErrorKind::ToolFailed => f.write_str("tool failed"),
        }
    }
}

impl ModelError {
    /// An error of class `kind`.
    pub fn new(kind: ModelErrorKind, message: impl Into<String>) -> Self {
        ModelError {
            kind,
            message: message.into(),
            errors: Vec::new(),
        }
    }

    /// The same error, listing `errors`.
    pub fn with_errors(mut self, errors: Vec<String>) -> Self {
        self.errors = errors;
        self
    }

    /// A transport failure.
    pub fn transport(message: impl Into<String>) -> Self {
        ModelError::new(ModelErrorKind::Transport, message)
    }

    /// A non-success `status`.
    pub fn status(status: u16, message: impl Into<String>) -> Self {
        ModelError::new(ModelErrorKind::Status(status), message)
    }

    /// A timeout.
    pub fn timeout(message: impl Into<String>) -> Self {
        ModelError::new(ModelErrorKind::Timeout, message)
    }

    pub(crate) fn budget(e: &BudgetExhausted) -> Self {
        ModelError::new(
            ModelErrorKind::Budget,
            format!("no further attempt: the run's {e}"),
        )
    }
}

impl From<ModelError> for crate::spec::Reject {
    /// The refusal of an agent whose model call failed (`?` on
    /// `cx.generate`): the turn ends, and the run records the error with
    /// the turn's model calls.
    fn from(e: ModelError) -> Self {
        crate::spec::Reject::because(e.to_string())
    }
}

/// One model call as the executor recorded it with its turn: every
/// attempt's request digest, reply and usage, and the outcome.
/// `(run, input_seq, index)` of its turn identifies the call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelCallRecord {
    /// The call's position among its turn's model calls, from 0.
    pub index: u32,
    /// The model asked (the request's, or the backend's default).
    pub model: Cow<'static, str>,
    /// The name of the schema the reply had to match (`None` for plain text).
    pub schema: Option<String>,
    /// The tools the model was offered, by name (a tool loop,
    /// `cx.tool_loop`; empty for `cx.generate`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// The SHA-256 of the first request (see [`ModelRequest::digest`](crate::llm::ModelRequest::digest)).
    pub request_digest: String,
    /// Every attempt, in order: the first request and each repair (in a
    /// tool loop: every model step).
    pub attempts: Vec<ModelAttempt>,
    /// Tokens and cost of all attempts (charged to the run's budget).
    pub usage: Usage,
    /// What the call gave the agent.
    pub outcome: ModelOutcome,
    /// Microseconds from the first request to the outcome.
    pub duration_us: u64,
}

/// One attempt of a model call: the request sent, what came back, and why
/// it was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelAttempt {
    /// The SHA-256 of the request sent.
    pub request_digest: String,
    /// The reply's text, when a reply came (what replay serves).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<String>,
    /// The model's refusal, when it refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<String>,
    /// Tokens and cost of this attempt.
    pub usage: Usage,
    /// Why this attempt was not accepted (`None` for the accepted one, and
    /// for a step that asked for tools).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ModelError>,
    /// The tool calls the reply asked for, in order (what replay serves
    /// with the reply).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCallRequest>,
    /// What each asked-for call got, in the same order: the tool call made
    /// (its index among the turn's tool calls) or the refusal fed back.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answers: Vec<ToolAnswer>,
}

/// A tool call a model asks for: the id it gave the call, the tool's name
/// and the arguments as the JSON text it wrote (not yet checked: it may
/// not even be JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolCallRequest {
    /// The model's id for the call (the tool result names it).
    pub id: String,
    /// The tool asked for.
    pub name: String,
    /// The arguments, as JSON text.
    pub arguments: String,
}

impl ToolCallRequest {
    /// A request to call `name` with `arguments` (JSON text), as call `id`.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        ToolCallRequest {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }
}

/// What a model's tool call request got in a tool loop.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolAnswer {
    /// The request's id.
    pub id: String,
    /// The index of the tool call made (among the turn's tool calls, whose
    /// record holds the arguments and the result or the error); `None` when
    /// the request was refused before any call was made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<u32>,
    /// Why the request was refused or the call failed, as fed back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ModelError>,
}

/// The outcome of a recorded model call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "status", rename_all = "snake_case", deny_unknown_fields)]
pub enum ModelOutcome {
    /// A value the agent got: the accepted reply.
    Ok {
        /// The SHA-256 of the accepted reply's text.
        digest: String,
    },
    /// A typed failure: the agent got the error, never a value.
    Failed {
        /// The error.
        error: ModelError,
    },
}
