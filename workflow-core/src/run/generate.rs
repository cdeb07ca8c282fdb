//! `cx.generate::<T>(prompt)`: one model call held to `T`'s schema, with
//! repairs, budget charges and its record.

use std::borrow::Cow;
use std::future::{Future, IntoFuture};
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;

use crate::llm::{Message, Model, ModelRequest, Prompt, ResponseFormat};
use crate::run::RunShared;
use crate::spec::Payload;
use crate::spec::Usage;
use crate::spec::{ModelAttempt, ModelCallRecord, ModelError, ModelErrorKind, ModelOutcome};

/// Repairs a generation makes unless told otherwise: three attempts in all.
pub const DEFAULT_REPAIRS: u32 = 2;

/// A caller's rule on a generated value (see [`Generation::check`]).
pub(super) type Rule<'a, T> = Box<dyn Fn(&T) -> Result<(), String> + Send + Sync + 'a>;

/// The model a generation asks.
enum Asked<'a> {
    Borrowed(&'a dyn Model),
    Shared(Arc<dyn Model>),
}

/// A model call for a `T`, to configure and then `.await`:
/// `cx.generate::<T>(prompt).repairs(1).check(rule).await`.
///
/// Awaiting it sends the prompt with `T`'s JSON Schema as the response
/// format. A reply is accepted once it parses as JSON, matches the schema,
/// deserializes as `T` (unknown fields denied, contract parts required) and
/// passes every [`check`](Self::check); otherwise it is sent back with the
/// errors, as a user message after the model's own reply, while repairs are
/// left. Every attempt's usage is charged to the run's budget as it comes
/// (a budget used up stops the repairs), and the whole call is recorded with
/// the turn ([`ModelCallRecord`]).
#[must_use = "a generation does nothing until it is awaited"]
pub struct Generation<'a, T> {
    shared: Arc<RunShared>,
    model: Result<Asked<'a>, ModelError>,
    prompt: Prompt,
    repairs: u32,
    strict: bool,
    rules: Vec<Rule<'a, T>>,
    out: PhantomData<fn() -> T>,
}

impl<'a, T: Payload> Generation<'a, T> {
    /// A generation with the run's model (`None`: none attached).
    pub(crate) fn shared(
        shared: Arc<RunShared>,
        model: Option<Arc<dyn Model>>,
        prompt: Prompt,
    ) -> Self {
        let model = model.map(Asked::Shared).ok_or_else(|| {
            ModelError::new(
                ModelErrorKind::NoModel,
                "no model is attached to the run: attach one with `Executor::with_model`, or pass one to `generate_with`",
            )
        });
        Generation::new(shared, model, prompt)
    }

    /// A generation with `model`.
    pub(crate) fn borrowed(shared: Arc<RunShared>, model: &'a dyn Model, prompt: Prompt) -> Self {
        Generation::new(shared, Ok(Asked::Borrowed(model)), prompt)
    }

    fn new(shared: Arc<RunShared>, model: Result<Asked<'a>, ModelError>, prompt: Prompt) -> Self {
        Generation {
            shared,
            model,
            prompt,
            repairs: DEFAULT_REPAIRS,
            strict: false,
            rules: Vec::new(),
            out: PhantomData,
        }
    }

    /// At most `n` repairs (`n + 1` attempts); the default is
    /// [`DEFAULT_REPAIRS`]. With `0`, the first bad reply ends the call
    /// ([`ModelErrorKind::RetriesExhausted`] after one attempt).
    pub fn repairs(mut self, n: u32) -> Self {
        self.repairs = n;
        self
    }

    /// Asks the server to enforce the schema exactly (OpenAI's `strict`
    /// structured outputs, which support only a subset of JSON Schema: every
    /// property required, no `oneOf`). The reply is validated here either way.
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// Adds a rule the value must pass beyond its schema; its `Err` message
    /// is fed back to the model like a schema error (class
    /// [`ModelErrorKind::ContractRule`]).
    pub fn check(mut self, rule: impl Fn(&T) -> Result<(), String> + Send + Sync + 'a) -> Self {
        self.rules.push(Box::new(rule));
        self
    }

    async fn run(self) -> Result<T, ModelError> {
        let Generation {
            shared,
            model,
            prompt,
            repairs,
            strict,
            rules,
            out: _,
        } = self;
        let model: &dyn Model = match &model {
            Ok(Asked::Borrowed(m)) => *m,
            Ok(Asked::Shared(m)) => &**m,
            Err(e) => return Err(e.clone()),
        };
        let index = {
            let mut log = shared.lock();
            log.next_model_call += 1;
            log.next_model_call - 1
        };
        shared.mark();
        let name = <T as schemars::JsonSchema>::schema_name().into_owned();
        // Built and compiled once per type, not per call (`export/validate.rs`).
        let compiled = crate::export::validate::compiled::<T>(crate::spec::root_schema::<T>);
        let schema = &compiled.schema;
        let mut request = ModelRequest {
            model: prompt.model.clone(),
            messages: prompt.messages().to_vec(),
            response_format: Some(ResponseFormat {
                name: format_name(&name),
                schema: schema.clone(),
                strict,
            }),
            tools: Vec::new(),
        };
        let mut call = InFlight {
            shared: &shared,
            record: Some(ModelCallRecord {
                index,
                model: Cow::Owned(prompt.model.unwrap_or_else(|| model.name().to_owned())),
                schema: Some(name.clone()),
                tools: Vec::new(),
                request_digest: request.digest(),
                attempts: Vec::new(),
                usage: Usage::default(),
                // Both set when the call ends (`InFlight::write`).
                outcome: ModelOutcome::Ok {
                    digest: String::new(),
                },
                duration_us: 0,
            }),
            started: std::time::Instant::now(),
            #[cfg(feature = "tracing")]
            span: tracing::Span::current(),
            #[cfg(feature = "metrics")]
            provider: model.provider().to_owned(),
        };
        loop {
            let request_digest = request.digest();
            let reply = match model.complete(&request).await {
                Ok(reply) => reply,
                Err(error) => {
                    call.attempt(ModelAttempt {
                        request_digest,
                        reply: None,
                        refusal: None,
                        usage: Usage::default(),
                        error: Some(error.clone()),
                        tool_calls: Vec::new(),
                        answers: Vec::new(),
                    });
                    return call.failed(error);
                }
            };
            let over_budget = shared.charge(reply.usage).err();
            let verdict = match &reply.refusal {
                Some(why) => Err(ModelError::new(
                    ModelErrorKind::Refusal,
                    format!("the model refused: {why}"),
                )),
                None => accept::<T>(&reply.text, &compiled, &name, &rules),
            };
            let attempts = call.attempt(ModelAttempt {
                request_digest,
                reply: Some(reply.text.clone()),
                refusal: reply.refusal.clone(),
                usage: reply.usage,
                error: verdict.as_ref().err().cloned(),
                tool_calls: Vec::new(),
                answers: Vec::new(),
            });
            match verdict {
                Ok(value) => return call.accepted(value, &reply.text),
                Err(error) if !error.kind.is_repairable() => return call.failed(error),
                Err(error) => {
                    if let Some(spent) = over_budget {
                        return call.failed(ModelError::budget(&spent).with_errors(error.errors));
                    }
                    if attempts as u64 > u64::from(repairs) {
                        return call.failed(exhausted(attempts, error));
                    }
                    request.messages.push(Message::assistant(reply.text));
                    request
                        .messages
                        .push(Message::user(feedback(&name, &error)));
                }
            }
        }
    }
}

/// The record of a model call under way: written to the turn log when the
/// call ends, or when it is cut off (its turn timed out, its step was
/// dropped), so that every attempt that was made and charged is recorded.
pub(super) struct InFlight<'s> {
    pub(super) shared: &'s RunShared,
    /// `None` once written.
    pub(super) record: Option<ModelCallRecord>,
    pub(super) started: std::time::Instant,
    /// The call's `chat` span (current while `run` runs; kept, because a
    /// drop may happen outside it).
    #[cfg(feature = "tracing")]
    pub(super) span: tracing::Span,
    /// The provider, for the token usage metrics.
    #[cfg(feature = "metrics")]
    pub(super) provider: String,
}

impl InFlight<'_> {
    /// Adds an attempt and its usage; returns how many there are.
    pub(super) fn attempt(&mut self, attempt: ModelAttempt) -> usize {
        match &mut self.record {
            Some(record) => {
                record.usage.add(&attempt.usage);
                record.attempts.push(attempt);
                record.attempts.len()
            }
            None => 0,
        }
    }

    pub(super) fn accepted<T>(mut self, value: T, text: &str) -> Result<T, ModelError> {
        self.write(ModelOutcome::Ok {
            digest: crate::encode::digest(text),
        });
        Ok(value)
    }

    pub(super) fn failed<T>(mut self, error: ModelError) -> Result<T, ModelError> {
        self.write(ModelOutcome::Failed {
            error: error.clone(),
        });
        Err(error)
    }

    fn write(&mut self, outcome: ModelOutcome) {
        let Some(mut record) = self.record.take() else {
            return;
        };
        record.outcome = outcome;
        record.duration_us = self.started.elapsed().as_micros() as u64;
        #[cfg(feature = "metrics")]
        crate::observe::metrics::record_token_usage(&crate::observe::metrics::TokenUsage {
            operation: "chat",
            provider: &self.provider,
            request_model: Some(&record.model),
            response_model: None,
            agent: None,
            input_tokens: Some(record.usage.input_tokens),
            output_tokens: Some(record.usage.output_tokens),
        });
        #[cfg(feature = "tracing")]
        {
            let span = &self.span;
            span.record("gen_ai.usage.input_tokens", record.usage.input_tokens);
            span.record("gen_ai.usage.output_tokens", record.usage.output_tokens);
            span.record("workflow.model.attempts", record.attempts.len());
            if let ModelOutcome::Failed { error } = &record.outcome {
                span.record("error.type", error_type(error.kind));
            }
        }
        self.shared.lock().model_calls.push(record);
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if self.record.is_some() {
            self.write(ModelOutcome::Failed {
                error: ModelError::new(
                    ModelErrorKind::Cancelled,
                    "the call was cut off before it ended (its turn timed out or was dropped)",
                ),
            });
        }
    }
}

impl<'a, T: Payload> IntoFuture for Generation<'a, T> {
    type Output = Result<T, ModelError>;
    type IntoFuture = Pin<Box<dyn Future<Output = Result<T, ModelError>> + Send + 'a>>;

    fn into_future(self) -> Self::IntoFuture {
        #[cfg(feature = "tracing")]
        {
            let model = match (&self.prompt.model, &self.model) {
                (Some(name), _) => name.clone(),
                (None, Ok(Asked::Borrowed(m))) => m.name().to_owned(),
                (None, Ok(Asked::Shared(m))) => m.name().to_owned(),
                (None, Err(_)) => String::new(),
            };
            let span = tracing::info_span!(
                "chat",
                otel.name = %format_args!("chat {model}"),
                gen_ai.operation.name = "chat",
                gen_ai.request.model = %model,
                gen_ai.output.type = "json",
                gen_ai.usage.input_tokens = tracing::field::Empty,
                gen_ai.usage.output_tokens = tracing::field::Empty,
                workflow.model.attempts = tracing::field::Empty,
                "error.type" = tracing::field::Empty,
            );
            Box::pin(tracing::Instrument::instrument(self.run(), span))
        }
        #[cfg(not(feature = "tracing"))]
        Box::pin(self.run())
    }
}

/// The value in `text`, if it parses, matches `schema`, deserializes as `T`
/// and passes every rule; otherwise the first stage's errors.
pub(super) fn accept<T: Payload>(
    text: &str,
    schema: &crate::export::validate::Compiled,
    name: &str,
    rules: &[Rule<'_, T>],
) -> Result<T, ModelError> {
    // Strict: a key twice (which one counts would be a guess) or nesting
    // past the limit is refused as a malformed reply, for the model to
    // repair.
    let value = crate::encode::parse_json(text).map_err(|e| {
        let message = match e {
            crate::spec::PayloadError::Invalid(_) => "the reply is not JSON",
            _ => "the reply is not JSON this executor takes",
        };
        ModelError::new(ModelErrorKind::MalformedJson, message).with_errors(vec![e.to_string()])
    })?;
    schema.check(&value).map_err(|errors| {
        ModelError::new(
            ModelErrorKind::SchemaMismatch,
            format!("the reply does not match the JSON Schema `{name}`"),
        )
        .with_errors(errors)
    })?;
    // The schema is the published contract; deserializing is the last word
    // (a contract part serde requires, a field it does not know).
    let typed: T = serde_json::from_value(value).map_err(|e| {
        ModelError::new(
            ModelErrorKind::SchemaMismatch,
            format!("the reply does not read as `{name}`"),
        )
        .with_errors(vec![e.to_string()])
    })?;
    let broken: Vec<String> = rules.iter().filter_map(|rule| rule(&typed).err()).collect();
    if !broken.is_empty() {
        return Err(ModelError::new(
            ModelErrorKind::ContractRule,
            format!("the reply breaks a rule on `{name}`"),
        )
        .with_errors(broken));
    }
    Ok(typed)
}

/// The user message that sends a rejected reply back.
pub(super) fn feedback(name: &str, error: &ModelError) -> String {
    let mut text = format!(
        "Your reply was not accepted ({}): {}.",
        error.kind, error.message
    );
    for e in &error.errors {
        text.push_str("\n- ");
        text.push_str(e);
    }
    text.push_str(&format!(
        "\nReply again with one JSON value that matches the JSON Schema `{name}`, and nothing else."
    ));
    text
}

/// The error of a call whose repairs are used up: the last reply's errors.
pub(super) fn exhausted(attempts: usize, last: ModelError) -> ModelError {
    ModelError::new(
        ModelErrorKind::RetriesExhausted,
        format!(
            "no usable reply in {attempts} attempt{}; the last: {} ({})",
            if attempts == 1 { "" } else { "s" },
            last.message,
            last.kind
        ),
    )
    .with_errors(last.errors)
}

/// The `error.type` of a failed model call (a stable, low-cardinality name).
#[cfg(feature = "tracing")]
pub(super) fn error_type(kind: ModelErrorKind) -> &'static str {
    match kind {
        ModelErrorKind::Transport => "transport",
        ModelErrorKind::Status(_) => "status",
        ModelErrorKind::Timeout => "timeout",
        ModelErrorKind::Refusal => "refusal",
        ModelErrorKind::MalformedJson => "malformed_json",
        ModelErrorKind::SchemaMismatch => "schema_mismatch",
        ModelErrorKind::ContractRule => "contract_rule",
        ModelErrorKind::RetriesExhausted => "retries_exhausted",
        ModelErrorKind::Budget => "budget_exhausted",
        ModelErrorKind::NoReply => "no_reply",
        ModelErrorKind::NoModel => "no_model",
        ModelErrorKind::UnsupportedSchema => "unsupported_schema",
        ModelErrorKind::Cancelled => "cancelled",
        ModelErrorKind::ToolNotOffered => "tool_not_offered",
        ModelErrorKind::ToolArguments => "tool_arguments",
        ModelErrorKind::StepLimit => "step_limit",
        ModelErrorKind::ToolFailed => "tool_failed",
    }
}

/// A response format name as OpenAI accepts it: `[a-zA-Z0-9_-]{1,64}`.
pub(super) fn format_name(schema: &str) -> String {
    let name: String = schema
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if name.is_empty() {
        "payload".to_owned()
    } else {
        name
    }
}

#[cfg(test)]
#[path = "generate_tests.rs"]
mod tests;
