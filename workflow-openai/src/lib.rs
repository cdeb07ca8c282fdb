//! An OpenAI-compatible chat completions backend for
//! [`workflow_core::llm`]: OpenAI itself, or any server speaking the same
//! API (Ollama, llama.cpp's `llama-server`, vLLM, LM Studio).
//!
//! A request's response format goes out in the backend's [`SchemaForm`]:
//! by default `response_format: {"type": "json_schema", ...}` with the
//! payload's published schema, or its OpenAI strict form when the request
//! asks for strict mode (the reply restored to the published form);
//! `{"type": "json_object", "schema": ...}` for llama.cpp's server. The
//! reply's text, refusal and token usage come back as a [`ModelReply`].
//! Checking the reply is not this crate's job: `cx.generate` does it for
//! every backend alike.
//! The tools a tool loop (`cx.tool_loop`) offers go out as function tools
//! (`tools: [{"type": "function", "function": {name, description,
//! parameters}}]`, the published definitions unchanged), the conversation
//! carries the assistant's `tool_calls` and a `tool` message per result,
//! and a reply's tool calls come back in its order (several per reply when
//! the server sends them); `cx.tool_loop` checks every call it asks for.
//!
//! The HTTP client is [`async-openai`](https://docs.rs/async-openai) with
//! only its chat completions API compiled in. Plain `http://` servers work
//! with the default features; enable `rustls` for `https://` URLs.
//!
//! ```no_run
//! use std::sync::Arc;
//! use workflow_openai::{OpenAiConfig, OpenAiModel};
//!
//! // OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_MODEL=qwen2.5:7b
//! let model = OpenAiModel::new(OpenAiConfig::from_env())?;
//! // let workflow = my_workflow::Workflow::new(root, deps).with_model(Arc::new(model));
//! # let _ = Arc::new(model);
//! # Ok::<(), workflow_openai::ConfigError>(())
//! ```

#![warn(missing_docs)]

mod form;

pub use form::SchemaForm;

use std::fmt;
use std::time::Duration;

use async_openai::Client;
use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::middleware::ReqwestService;
use async_openai::middleware::retry::OpenAIRetryLayer;
use async_openai::types::chat::{
    ChatCompletionMessageToolCall, ChatCompletionMessageToolCalls,
    ChatCompletionRequestAssistantMessage, ChatCompletionRequestAssistantMessageContent,
    ChatCompletionRequestMessage, ChatCompletionRequestSystemMessage,
    ChatCompletionRequestToolMessage, ChatCompletionRequestToolMessageContent,
    ChatCompletionRequestUserMessage, ChatCompletionTool, ChatCompletionTools,
    CreateChatCompletionRequest, CreateChatCompletionResponse, FunctionCall, FunctionObject,
};
use tower::Layer;
use workflow_core::Usage;
use workflow_core::llm::{
    Message, Model, ModelError, ModelFuture, ModelReply, ModelRequest, Role, ToolCallRequest,
};

/// The base URL when `OPENAI_BASE_URL` is not set.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
/// The model when `OPENAI_MODEL` is not set.
pub const DEFAULT_MODEL: &str = "gpt-4o-mini";
/// How long one HTTP request may take unless configured otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// Transport retries (of connection failures, 429 and 5xx) unless
/// configured otherwise.
pub const DEFAULT_TRANSPORT_RETRIES: u32 = 2;

/// Where and how to reach an OpenAI-compatible server.
#[derive(Clone, PartialEq)]
pub struct OpenAiConfig {
    /// The API's base URL, up to and including `/v1`.
    pub base_url: String,
    /// The bearer token (`None`: no `Authorization` worth the name; local
    /// servers do not ask for one).
    pub api_key: Option<String>,
    /// The model asked when a request names none.
    pub model: String,
    /// How long one HTTP request may take, connection to last byte.
    pub timeout: Duration,
    /// Retries of a connection failure, a 429 or a 5xx, with exponential
    /// backoff from 100 ms (the client's policy). A timeout is not retried.
    pub transport_retries: u32,
    /// The most tokens a reply may use (`max_completion_tokens`).
    pub max_completion_tokens: Option<u32>,
    /// The sampling temperature.
    pub temperature: Option<f32>,
    /// The form a request's structured output is sent in.
    pub schema_form: SchemaForm,
}

impl fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model", &self.model)
            .field("timeout", &self.timeout)
            .field("transport_retries", &self.transport_retries)
            .field("max_completion_tokens", &self.max_completion_tokens)
            .field("temperature", &self.temperature)
            .field("schema_form", &self.schema_form)
            .finish()
    }
}

impl OpenAiConfig {
    /// A server at `base_url` (`http://localhost:11434/v1` for Ollama,
    /// `http://localhost:8080/v1` for llama.cpp) asked for `model`, with
    /// the default timeout and retries and no API key.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        OpenAiConfig {
            base_url: base_url.into(),
            api_key: None,
            model: model.into(),
            timeout: DEFAULT_TIMEOUT,
            transport_retries: DEFAULT_TRANSPORT_RETRIES,
            max_completion_tokens: None,
            temperature: None,
            schema_form: SchemaForm::default(),
        }
    }

    /// The configuration the environment gives: `OPENAI_BASE_URL` (default
    /// [`OPENAI_BASE_URL`]), `OPENAI_API_KEY`, `OPENAI_MODEL` (default
    /// [`DEFAULT_MODEL`]), `OPENAI_TIMEOUT_SECS` (default 60),
    /// `OPENAI_SCHEMA_FORM` (`json_schema`, the default, or `json_object`
    /// for llama.cpp's server; another value is ignored).
    pub fn from_env() -> Self {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let mut config = OpenAiConfig::new(
            var("OPENAI_BASE_URL").unwrap_or_else(|| OPENAI_BASE_URL.to_owned()),
            var("OPENAI_MODEL").unwrap_or_else(|| DEFAULT_MODEL.to_owned()),
        );
        config.api_key = var("OPENAI_API_KEY");
        if let Some(secs) = var("OPENAI_TIMEOUT_SECS").and_then(|s| s.trim().parse().ok()) {
            config.timeout = Duration::from_secs(secs);
        }
        if let Some(form) = var("OPENAI_SCHEMA_FORM").and_then(|f| SchemaForm::parse(&f)) {
            config.schema_form = form;
        }
        config
    }

    /// The same configuration with an API key.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// The same configuration with another timeout per HTTP request.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The same configuration with `n` transport retries.
    pub fn transport_retries(mut self, n: u32) -> Self {
        self.transport_retries = n;
        self
    }

    /// The same configuration limiting each reply to `n` tokens.
    pub fn max_completion_tokens(mut self, n: u32) -> Self {
        self.max_completion_tokens = Some(n);
        self
    }

    /// The same configuration with a sampling temperature.
    pub fn temperature(mut self, t: f32) -> Self {
        self.temperature = Some(t);
        self
    }

    /// The same configuration sending structured output in `form`.
    pub fn schema_form(mut self, form: SchemaForm) -> Self {
        self.schema_form = form;
        self
    }
}

/// A configuration the backend cannot be built from.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The base URL is neither `http://` nor `https://`.
    #[error("base URL `{0}` must start with `http://` or `https://`")]
    Scheme(String),
    /// An `https://` URL in a build without TLS.
    #[error(
        "base URL `{0}` needs TLS: enable the `rustls` feature of `workflow-openai`, or use a plain `http://` server"
    )]
    NoTls(String),
    /// The HTTP client could not be built.
    #[error("the HTTP client cannot be built: {0}")]
    Client(String),
}

/// A [`Model`] served by an OpenAI-compatible chat completions API.
pub struct OpenAiModel {
    client: Client<OpenAIConfig>,
    config: OpenAiConfig,
}

impl fmt::Debug for OpenAiModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiModel")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl OpenAiModel {
    /// A backend for `config`.
    pub fn new(config: OpenAiConfig) -> Result<Self, ConfigError> {
        let url = config.base_url.trim_end_matches('/').to_owned();
        let lower = url.to_ascii_lowercase();
        if lower.starts_with("https://") {
            if !cfg!(feature = "rustls") {
                return Err(ConfigError::NoTls(url));
            }
        } else if !lower.starts_with("http://") {
            return Err(ConfigError::Scheme(url));
        }
        let http = reqwest::Client::builder()
            .timeout(config.timeout)
            .build()
            .map_err(|e| ConfigError::Client(e.to_string()))?;
        let service = OpenAIRetryLayer::new(config.transport_retries as usize)
            .layer(ReqwestService::new(http));
        let mut api = OpenAIConfig::new().with_api_base(url);
        // Never the environment's key for a configuration that has none.
        api = api.with_api_key(config.api_key.clone().unwrap_or_default());
        let client = Client::with_config(api).with_http_service(service);
        Ok(OpenAiModel { client, config })
    }

    /// A backend configured from the environment ([`OpenAiConfig::from_env`]).
    pub fn from_env() -> Result<Self, ConfigError> {
        OpenAiModel::new(OpenAiConfig::from_env())
    }

    /// Its configuration.
    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    /// The chat completions request for `request`.
    fn chat_request(&self, request: &ModelRequest) -> CreateChatCompletionRequest {
        let messages = request.messages.iter().map(message).collect();
        // The tools offered, as function tools: the published definitions
        // (name, doc comment, input schema) unchanged.
        let tools = (!request.tools.is_empty()).then(|| {
            request
                .tools
                .iter()
                .map(|t| {
                    ChatCompletionTools::Function(ChatCompletionTool {
                        function: FunctionObject {
                            name: t.name.clone(),
                            description: Some(t.description.clone()),
                            parameters: Some(t.input_schema.clone()),
                            strict: None,
                        },
                    })
                })
                .collect()
        });
        CreateChatCompletionRequest {
            messages,
            model: request
                .model
                .clone()
                .unwrap_or_else(|| self.config.model.clone()),
            tools,
            max_completion_tokens: self.config.max_completion_tokens,
            temperature: self.config.temperature,
            ..CreateChatCompletionRequest::default()
        }
    }
}

impl Model for OpenAiModel {
    fn name(&self) -> &str {
        &self.config.model
    }

    fn provider(&self) -> &str {
        "openai"
    }

    fn complete<'a>(&'a self, request: &'a ModelRequest) -> ModelFuture<'a> {
        Box::pin(async move {
            let chat = self.chat_request(request);
            let mut body = serde_json::to_value(&chat).map_err(|e| {
                ModelError::transport(format!("the request does not serialize: {e}"))
            })?;
            // The response format in the backend's form (the client's types
            // have no field for `json_object` with a schema).
            let mut strict = None;
            // llama.cpp's server turns a `json_object` schema into a grammar
            // for every reply, so a model offered tools could never call one:
            // with tools offered, that form leaves the response format out
            // and gives the model the answer's schema in a system message
            // instead (the answer is still checked, and repaired, at the seam).
            let grammar_blocks_tools =
                self.config.schema_form == SchemaForm::JsonObject && !request.tools.is_empty();
            if let (true, Some(format), Some(messages)) = (
                grammar_blocks_tools,
                &request.response_format,
                body["messages"].as_array_mut(),
            ) {
                messages.push(serde_json::json!({
                    "role": "system",
                    "content": format!(
                        "Call a tool, or give your final answer as JSON only, valid against \
                         this JSON Schema ({}): {}",
                        format.name, format.schema
                    ),
                }));
            }
            if let Some(format) = request
                .response_format
                .as_ref()
                .filter(|_| !grammar_blocks_tools)
            {
                let (value, sent) = form::response_format(self.config.schema_form, format)?;
                body["response_format"] = value;
                strict = sent;
            }
            let response: CreateChatCompletionResponse = self
                .client
                .chat()
                .create_byot(body)
                .await
                .map_err(classify)?;
            let mut reply = reply(response)?;
            reply.text = form::restore(strict.as_ref(), reply.text);
            Ok(reply)
        })
    }
}

/// One message of a conversation as the chat completions API takes it.
fn message(m: &Message) -> ChatCompletionRequestMessage {
    match m.role {
        Role::System => ChatCompletionRequestMessage::System(
            ChatCompletionRequestSystemMessage::from(m.content.as_str()),
        ),
        Role::User => ChatCompletionRequestMessage::User(ChatCompletionRequestUserMessage::from(
            m.content.as_str(),
        )),
        Role::Assistant if m.tool_calls.is_empty() => ChatCompletionRequestMessage::Assistant(
            ChatCompletionRequestAssistantMessage::from(m.content.as_str()),
        ),
        Role::Assistant => {
            let calls = m
                .tool_calls
                .iter()
                .map(|c| {
                    ChatCompletionMessageToolCalls::Function(ChatCompletionMessageToolCall {
                        id: c.id.clone(),
                        function: FunctionCall {
                            name: c.name.clone(),
                            arguments: c.arguments.clone(),
                        },
                    })
                })
                .collect();
            ChatCompletionRequestMessage::Assistant(ChatCompletionRequestAssistantMessage {
                content: (!m.content.is_empty())
                    .then(|| ChatCompletionRequestAssistantMessageContent::Text(m.content.clone())),
                tool_calls: Some(calls),
                ..ChatCompletionRequestAssistantMessage::default()
            })
        }
        Role::Tool => ChatCompletionRequestMessage::Tool(ChatCompletionRequestToolMessage {
            content: ChatCompletionRequestToolMessageContent::Text(m.content.clone()),
            tool_call_id: m.tool_call_id.clone().unwrap_or_default(),
        }),
    }
}

/// The reply in a chat completion: its first choice.
fn reply(response: CreateChatCompletionResponse) -> Result<ModelReply, ModelError> {
    let usage = response.usage.as_ref().map_or(Usage::default(), |u| {
        Usage::tokens(u64::from(u.prompt_tokens), u64::from(u.completion_tokens))
    });
    let Some(choice) = response.choices.into_iter().next() else {
        return Err(ModelError::transport("the chat completion has no choices"));
    };
    // A custom (free-text) tool call is not one this crate offers: kept
    // under its name with its input as the arguments, so that the loop
    // refuses it as a tool not offered, on the record.
    let tool_calls = choice
        .message
        .tool_calls
        .unwrap_or_default()
        .into_iter()
        .map(|call| match call {
            ChatCompletionMessageToolCalls::Function(f) => {
                ToolCallRequest::new(f.id, f.function.name, f.function.arguments)
            }
            ChatCompletionMessageToolCalls::Custom(c) => {
                ToolCallRequest::new(c.id, c.custom_tool.name, c.custom_tool.input)
            }
        })
        .collect();
    Ok(ModelReply {
        text: choice.message.content.unwrap_or_default(),
        refusal: choice.message.refusal,
        usage,
        model: Some(response.model),
        tool_calls,
    })
}

/// The class of a client error.
fn classify(error: OpenAIError) -> ModelError {
    match error {
        OpenAIError::Reqwest(e) if e.is_timeout() => {
            ModelError::timeout(format!("no answer in time: {e}"))
        }
        OpenAIError::Reqwest(e) => ModelError::transport(describe(&e)),
        OpenAIError::ApiError(e) => {
            ModelError::status(e.status_code.as_u16(), e.api_error.to_string())
        }
        OpenAIError::JSONDeserialize(e, body) => ModelError::transport(format!(
            "the answer is not a chat completion ({e}): {}",
            clip(&body)
        )),
        other => ModelError::transport(other.to_string()),
    }
}

/// A reqwest error with its causes (its `Display` alone says little).
fn describe(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// At most 500 bytes of a body, for a message.
fn clip(body: &str) -> &str {
    let mut end = body.len().min(500);
    while !body.is_char_boundary(end) {
        end -= 1;
    }
    &body[..end]
}
