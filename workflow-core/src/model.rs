//! Models: chat and structured generation held to a payload's JSON Schema.
//!
//! A [`Model`] answers one [`ModelRequest`] (messages, and optionally a
//! response format: a JSON Schema) with one [`ModelReply`] (its text, a
//! refusal, the tokens it used). An agent asks for a typed value with
//! [`Context::generate`](crate::Context::generate): the target payload's
//! schema (draft 2020-12, the one [`SchemaSet`](crate::SchemaSet)
//! publishes) is sent as the response format; the reply is parsed,
//! validated against the schema and deserialized (unknown fields denied,
//! contract parts required); a bad reply is sent back with the errors, up to
//! a declared number of repairs; every attempt's tokens are charged to the
//! run's budget, and the call is recorded with its turn
//! ([`ModelCallRecord`]).
//!
//! [`ScriptedModel`] replies from a list (tests, offline examples);
//! [`RecordedModel`] serves the replies a run recorded (replay, without a
//! network). The OpenAI-compatible HTTP backend lives in the
//! `workflow-openai` crate, so that this crate's build carries no HTTP stack.

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::budget::{BudgetExhausted, Usage};

mod generate;
mod scripted;

pub use generate::{DEFAULT_REPAIRS, Generation};
pub use scripted::{RecordedModel, ScriptedModel};

/// Who says a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Instructions that frame the conversation.
    System,
    /// The caller: the agent's prompt, and the errors of a rejected reply.
    User,
    /// The model: its earlier replies.
    Assistant,
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Message {
    /// Who says it.
    pub role: Role,
    /// What is said.
    pub content: String,
}

impl Message {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Message {
            role: Role::System,
            content: content.into(),
        }
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Message {
            role: Role::User,
            content: content.into(),
        }
    }

    /// An assistant (model) message.
    pub fn assistant(content: impl Into<String>) -> Self {
        Message {
            role: Role::Assistant,
            content: content.into(),
        }
    }
}

/// The structured output a request asks for: a reply that is one JSON value
/// matching `schema` (the OpenAI `response_format` of type `json_schema`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResponseFormat {
    /// The format's name (`[a-zA-Z0-9_-]{1,64}`): the schema's name.
    pub name: String,
    /// The JSON Schema (draft 2020-12) the reply must match.
    pub schema: serde_json::Value,
    /// Ask the server to enforce the schema exactly (OpenAI's `strict`),
    /// which only a subset of JSON Schema supports. The reply is validated
    /// here either way.
    pub strict: bool,
}

/// One request to a model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelRequest {
    /// The model to ask; `None` for the backend's configured model.
    pub model: Option<String>,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// The structured output asked for; `None` for plain text.
    pub response_format: Option<ResponseFormat>,
}

impl ModelRequest {
    /// The SHA-256 of the request's JSON text, hex-encoded: what a recorded
    /// reply is matched by on replay.
    pub fn digest(&self) -> String {
        crate::tool::digest(&serde_json::to_string(self).unwrap_or_default())
    }
}

/// One reply of a model.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelReply {
    /// The reply's text (for structured output: the JSON text).
    pub text: String,
    /// The model's refusal to answer, when it refused.
    pub refusal: Option<String>,
    /// The tokens (and cost) the call used, as the backend reported them.
    pub usage: Usage,
    /// The model that answered, as the backend named it.
    pub model: Option<String>,
}

impl ModelReply {
    /// A reply saying `text`, with no usage reported.
    pub fn text(text: impl Into<String>) -> Self {
        ModelReply {
            text: text.into(),
            ..ModelReply::default()
        }
    }

    /// A refusal saying why.
    pub fn refusal(why: impl Into<String>) -> Self {
        ModelReply {
            refusal: Some(why.into()),
            ..ModelReply::default()
        }
    }

    /// The same reply, having used `usage`.
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = usage;
        self
    }
}

/// The future of one model call.
pub type ModelFuture<'a> =
    Pin<Box<dyn Future<Output = Result<ModelReply, ModelError>> + Send + 'a>>;

/// A model that answers requests: an HTTP backend, a script, a recording.
///
/// Object-safe on purpose (the call returns a boxed future): a run's model
/// is chosen when the executor is built (`Executor::with_model`), as an
/// `Arc<dyn Model>`, so that the same workflow runs against a real server, a
/// script in its tests and a recording on replay without being generic over
/// the model. One allocation per call costs nothing next to a model's
/// latency.
///
/// A backend reports what it could not do as a [`ModelError`] (transport,
/// status, timeout) and retries transport failures itself, as it is
/// configured to; a reply it got, refusals included, is an `Ok`: checking
/// the reply is [`Generation`]'s job.
pub trait Model: Send + Sync {
    /// The model's name (the one a request with `model: None` gets).
    fn name(&self) -> &str;

    /// The provider, as the OpenTelemetry GenAI conventions name it
    /// (`gen_ai.provider.name`: `openai`, `anthropic`, ...), for the token
    /// usage metrics; `unknown` unless the backend says.
    fn provider(&self) -> &str {
        "unknown"
    }

    /// Sends `request`, returns the reply.
    fn complete<'a>(&'a self, request: &'a ModelRequest) -> ModelFuture<'a>;
}

impl<M: Model + ?Sized> Model for Arc<M> {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn provider(&self) -> &str {
        (**self).provider()
    }
    fn complete<'a>(&'a self, request: &'a ModelRequest) -> ModelFuture<'a> {
        (**self).complete(request)
    }
}

impl<M: Model + ?Sized> Model for Box<M> {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn provider(&self) -> &str {
        (**self).provider()
    }
    fn complete<'a>(&'a self, request: &'a ModelRequest) -> ModelFuture<'a> {
        (**self).complete(request)
    }
}

/// What a prompt asks: the conversation an agent opens, and which model.
///
/// ```
/// use workflow_core::model::Prompt;
/// let prompt = Prompt::new("Triage: the staging deploy fails")
///     .system("You are the on-call triager.");
/// assert_eq!(prompt.messages().len(), 2);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prompt {
    messages: Vec<Message>,
    model: Option<String>,
}

impl Prompt {
    /// A prompt of one user message.
    pub fn new(user: impl Into<String>) -> Self {
        Prompt {
            messages: vec![Message::user(user)],
            model: None,
        }
    }

    /// The same prompt with a system message first (replacing an earlier one).
    pub fn system(mut self, text: impl Into<String>) -> Self {
        if self
            .messages
            .first()
            .is_some_and(|m| m.role == Role::System)
        {
            self.messages.remove(0);
        }
        self.messages.insert(0, Message::system(text));
        self
    }

    /// The same prompt with `message` appended.
    pub fn message(mut self, message: Message) -> Self {
        self.messages.push(message);
        self
    }

    /// The same prompt, asking model `name` instead of the backend's default.
    pub fn model(mut self, name: impl Into<String>) -> Self {
        self.model = Some(name.into());
        self
    }

    /// The messages, in order.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }
}

impl From<&str> for Prompt {
    fn from(user: &str) -> Self {
        Prompt::new(user)
    }
}

impl From<String> for Prompt {
    fn from(user: String) -> Self {
        Prompt::new(user)
    }
}

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
    /// ([`Generation::check`]).
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
    /// The call was cut off before it ended: its turn timed out, or the
    /// step running it was dropped (recorded, never returned).
    Cancelled,
}

impl ModelErrorKind {
    /// Whether a reply of this class is sent back to the model with its
    /// errors: malformed JSON, a schema mismatch, a broken contract rule.
    pub fn is_repairable(self) -> bool {
        matches!(
            self,
            ModelErrorKind::MalformedJson
                | ModelErrorKind::SchemaMismatch
                | ModelErrorKind::ContractRule
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
            ModelErrorKind::Cancelled => f.write_str("cancelled"),
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

impl From<ModelError> for crate::Reject {
    /// The refusal of an agent whose model call failed (`?` on
    /// `cx.generate`): the turn ends, and the run records the error with
    /// the turn's model calls.
    fn from(e: ModelError) -> Self {
        crate::Reject::because(e.to_string())
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
    /// The SHA-256 of the first request (see [`ModelRequest::digest`]).
    pub request_digest: String,
    /// Every attempt, in order: the first request and each repair.
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
    /// Why this attempt was not accepted (`None` for the accepted one).
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

#[cfg(test)]
mod tests;
