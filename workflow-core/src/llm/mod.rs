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
//! With [`Context::tool_loop`](crate::Context::tool_loop) the model is also
//! offered tools ([`ToolDefinition`]: the published `mcp_tools` entries) and
//! may answer with [`ToolCallRequest`]s; each is checked and made like a
//! `cx.call`, its result (or refusal) sent back as a [`Role::Tool`]
//! message, until the model answers with the value; the whole loop is one
//! [`ModelCallRecord`] listing the tools offered and every step.
//!
//! [`ScriptedModel`] replies from a list (tests, offline examples);
//! [`RecordedModel`] serves the replies a run recorded (replay, without a
//! network). The OpenAI-compatible HTTP backend lives in the
//! `workflow-openai` crate, so that this crate's build carries no HTTP stack.

use crate::spec::Usage;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

mod scripted;

pub use crate::spec::{
    ModelAttempt, ModelCallRecord, ModelError, ModelErrorKind, ModelOutcome, ToolAnswer,
    ToolCallRequest,
};
pub use scripted::{RecordedModel, ScriptedModel};

/// Who says a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Instructions that frame the conversation.
    System,
    /// The caller: the agent's prompt, and the errors of a rejected reply.
    User,
    /// The model: its earlier replies (and the tool calls it asked for).
    Assistant,
    /// A tool's result (or the refusal of a call), answering the call
    /// named by the message's `tool_call_id`.
    Tool,
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Message {
    /// Who says it.
    pub role: Role,
    /// What is said.
    pub content: String,
    /// The tool calls an assistant message asked for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCallRequest>,
    /// The call a tool message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    fn plain(role: Role, content: impl Into<String>) -> Self {
        Message {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }

    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Message::plain(Role::System, content)
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Message::plain(Role::User, content)
    }

    /// An assistant (model) message.
    pub fn assistant(content: impl Into<String>) -> Self {
        Message::plain(Role::Assistant, content)
    }

    /// An assistant message asking for tool `calls` (with its text, often
    /// empty).
    pub fn tool_calls(content: impl Into<String>, calls: Vec<ToolCallRequest>) -> Self {
        Message {
            tool_calls: calls,
            ..Message::plain(Role::Assistant, content)
        }
    }

    /// A tool message: the answer to call `id` (a result's JSON text, or
    /// why the call was refused or failed).
    pub fn tool_result(id: impl Into<String>, content: impl Into<String>) -> Self {
        Message {
            tool_call_id: Some(id.into()),
            ..Message::plain(Role::Tool, content)
        }
    }
}

/// A tool a request offers the model: its name, what it does (the tool's
/// doc comment) and the JSON Schema of its arguments: the definitions
/// `Workflow::mcp_tools()` publishes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolDefinition {
    /// The tool's name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// The JSON Schema (draft 2020-12) of its arguments.
    pub input_schema: serde_json::Value,
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
    /// The tools offered (a tool loop); the model may answer with calls to
    /// them instead of a final reply. Empty for a plain generation (and
    /// then left out of the request's JSON, so that its digest is the one
    /// earlier records hold).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolDefinition>,
}

impl ModelRequest {
    /// The SHA-256 of the request's JSON text, hex-encoded: what a recorded
    /// reply is matched by on replay.
    pub fn digest(&self) -> String {
        crate::encode::digest(&serde_json::to_string(self).unwrap_or_default())
    }
}

/// One reply of a model.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelReply {
    /// The reply's text (for structured output: the JSON text; often empty
    /// beside tool calls).
    pub text: String,
    /// The tool calls the model asks for instead of answering (when the
    /// request offered tools), in its order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCallRequest>,
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

    /// A reply asking for tool `calls`, with no text.
    pub fn calls(calls: impl IntoIterator<Item = ToolCallRequest>) -> Self {
        ModelReply {
            tool_calls: calls.into_iter().collect(),
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
/// the reply is [`Generation`](crate::Generation)'s job.
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
/// use workflow_core::llm::Prompt;
/// let prompt = Prompt::new("Triage: the staging deploy fails")
///     .system("You are the on-call triager.");
/// assert_eq!(prompt.messages().len(), 2);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prompt {
    pub(crate) messages: Vec<Message>,
    pub(crate) model: Option<String>,
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
