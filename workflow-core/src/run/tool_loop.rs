//! `cx.tool_loop::<T>(prompt, tools)`: the model chooses among the agent's
//! granted tools, step after step, until it answers with a `T`; every call
//! it asks for is held to the checks of `cx.call`.

use std::borrow::Cow;
use std::future::{Future, IntoFuture};
use std::marker::PhantomData;
use std::pin::Pin;

use super::generate::{InFlight, Rule, accept, exhausted, feedback, format_name};
use crate::llm::{Message, ModelRequest, Prompt, ResponseFormat, ToolDefinition};
use crate::run::Context;
use crate::run::toolset::{DispatchedCall, Toolset};
use crate::spec::{Agent, Payload, Then, Usage, Workflow};
use crate::spec::{
    ModelAttempt, ModelCallRecord, ModelError, ModelErrorKind, ModelOutcome, ToolAnswer,
    ToolCallRequest,
};

/// Model steps a tool loop takes unless told otherwise
/// ([`ToolLoop::max_steps`]).
pub const DEFAULT_MAX_STEPS: u32 = 8;

/// The dispatch of a requested call, with the tools' values erased.
type Dispatch<'x, W, A> = Box<
    dyn Fn(
            &Context<'x, W, A>,
            &str,
            serde_json::Value,
        ) -> Option<Result<DispatchedCall<'x>, ModelError>>
        + Send
        + Sync
        + 'x,
>;

/// A model in the loop, to configure and then `.await`:
/// `cx.tool_loop::<Triage>(prompt, (tools::lookup, tools::write)).max_steps(6).await`.
///
/// Named for what it is: the loop of model steps and tool calls that the
/// chat APIs' function calling runs, here with its checks. Each step sends
/// the conversation with the tools offered and `T`'s JSON Schema as the
/// response format. A reply that asks for tool calls gets them made, in
/// the reply's order (several per reply are served one after the other, so
/// that indices, journal and replay stay deterministic), and their results
/// fed back; a reply without calls is the answer, accepted as
/// [`Generation`](crate::Generation) accepts one (JSON, schema, type,
/// rules) or sent back for repair.
///
/// Every requested call passes, in order: the offer (a tool not offered,
/// or one that does not exist, is refused and the refusal fed back), its
/// input schema and input type (errors fed back), then exactly the path of
/// `cx.call`: scope, tool-call budget, guard, journal (a resumed turn is
/// served its journaled calls), retries, fail-fast, record, span. A call
/// that fails under `then = abort` ends the loop at once with
/// [`ModelErrorKind::ToolFailed`]: the turn fails whatever the model would
/// say next, and no further tool acts for it. Under `then = escalate` the
/// failure is fed back and the loop goes on (the run is suspended at the end
/// of the turn).
///
/// Limits: at most [`max_steps`](Self::max_steps) model steps (a reply
/// still asking for tools at the last one is [`ModelErrorKind::StepLimit`];
/// its calls are not made), at most [`repairs`](Self::repairs) rejected
/// replies or refused requests ([`ModelErrorKind::RetriesExhausted`]);
/// every step's tokens are charged to the run's budget. The whole loop is
/// recorded with the turn as one [`ModelCallRecord`]: the tools offered,
/// each step (request digest, reply, tool calls asked, what each got,
/// usage) and the outcome; the calls made are in the turn's tool calls.
#[must_use = "a tool loop does nothing until it is awaited"]
pub struct ToolLoop<'x, W: Workflow, A, T> {
    cx: Context<'x, W, A>,
    prompt: Prompt,
    names: Vec<&'static str>,
    definitions: Vec<ToolDefinition>,
    dispatch: Dispatch<'x, W, A>,
    max_steps: u32,
    repairs: u32,
    strict: bool,
    rules: Vec<Rule<'x, T>>,
    out: PhantomData<fn() -> T>,
}

impl<'x, W: Workflow, A: Agent<W>, T: Payload> ToolLoop<'x, W, A, T> {
    pub(crate) fn new<S: Toolset<W, A>>(cx: Context<'x, W, A>, prompt: Prompt, tools: S) -> Self {
        ToolLoop {
            cx,
            prompt,
            names: S::names(),
            definitions: offered::<W, A, S>(),
            dispatch: Box::new(move |cx, name, arguments| tools.dispatch(cx, name, arguments)),
            max_steps: A::MAX_STEPS.unwrap_or(DEFAULT_MAX_STEPS).max(1),
            repairs: super::generate::DEFAULT_REPAIRS,
            strict: false,
            rules: Vec::new(),
            out: PhantomData,
        }
    }

    /// At most `n` model steps (requests), the answer's included; the
    /// default is the agent's declared `#[agent(max_steps = N)]`, or else
    /// [`DEFAULT_MAX_STEPS`]. `1` lets the model answer but not call a tool.
    pub fn max_steps(mut self, n: u32) -> Self {
        self.max_steps = n.max(1);
        self
    }

    /// At most `n` rejected replies and refused tool requests in all; the
    /// default is [`DEFAULT_REPAIRS`](crate::DEFAULT_REPAIRS).
    pub fn repairs(mut self, n: u32) -> Self {
        self.repairs = n;
        self
    }

    /// Asks the server to enforce the answer's schema exactly (as
    /// [`Generation::strict`](crate::Generation::strict)).
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// Adds a rule the answer must pass beyond its schema (as
    /// [`Generation::check`](crate::Generation::check)).
    pub fn check(mut self, rule: impl Fn(&T) -> Result<(), String> + Send + Sync + 'x) -> Self {
        self.rules.push(Box::new(rule));
        self
    }

    async fn run(self) -> Result<T, ModelError> {
        let ToolLoop {
            cx,
            prompt,
            names,
            definitions,
            dispatch,
            max_steps,
            repairs,
            strict,
            rules,
            out: _,
        } = self;
        let shared = cx.run.shared().clone();
        let Some(model) = shared.model.clone() else {
            return Err(ModelError::new(
                ModelErrorKind::NoModel,
                "no model is attached to the run: attach one with `Executor::with_model`",
            ));
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
        let model_name = prompt
            .model
            .clone()
            .unwrap_or_else(|| model.name().to_owned());
        let mut request = ModelRequest {
            model: prompt.model.clone(),
            messages: prompt.messages().to_vec(),
            response_format: Some(ResponseFormat {
                name: format_name(&name),
                schema: schema.clone(),
                strict,
            }),
            tools: definitions,
        };
        let mut call = InFlight {
            shared: &shared,
            record: Some(ModelCallRecord {
                index,
                model: Cow::Owned(model_name.clone()),
                schema: Some(name.clone()),
                tools: names.iter().map(|n| (*n).to_owned()).collect(),
                request_digest: request.digest(),
                attempts: Vec::new(),
                usage: Usage::default(),
                outcome: ModelOutcome::Ok {
                    digest: String::new(),
                },
                duration_us: 0,
            }),
            started: std::time::Instant::now(),
            #[cfg(feature = "tracing")]
            span: tracing::Span::none(),
            #[cfg(feature = "metrics")]
            provider: model.provider().to_owned(),
        };
        let mut rejected: u32 = 0;
        let mut step: u32 = 0;
        loop {
            step += 1;
            let request_digest = request.digest();
            let reply = match chat(&*model, &request, &model_name, step).await {
                Ok(reply) => reply,
                Err(error) => {
                    call.attempt(attempt(request_digest, None, Some(error.clone())));
                    return call.failed(error);
                }
            };
            let over_budget = shared.charge(reply.usage).err();
            if let Some(why) = &reply.refusal {
                let error =
                    ModelError::new(ModelErrorKind::Refusal, format!("the model refused: {why}"));
                call.attempt(attempt(request_digest, Some(&reply), Some(error.clone())));
                return call.failed(error);
            }
            if reply.tool_calls.is_empty() {
                // The answer.
                let verdict = accept::<T>(&reply.text, &compiled, &name, &rules);
                call.attempt(attempt(
                    request_digest,
                    Some(&reply),
                    verdict.as_ref().err().cloned(),
                ));
                match verdict {
                    Ok(value) => return call.accepted(value, &reply.text),
                    Err(error) if !error.kind.is_repairable() => return call.failed(error),
                    Err(error) => {
                        if let Some(spent) = &over_budget {
                            return call
                                .failed(ModelError::budget(spent).with_errors(error.errors));
                        }
                        rejected += 1;
                        if rejected > repairs || step >= max_steps {
                            return call.failed(ended(rejected, repairs, step, max_steps, error));
                        }
                        request.messages.push(Message::assistant(reply.text));
                        request
                            .messages
                            .push(Message::user(feedback(&name, &error)));
                        continue;
                    }
                }
            }
            // Tool calls asked for.
            if let Some(spent) = &over_budget {
                let error = ModelError::budget(spent);
                call.attempt(attempt(request_digest, Some(&reply), Some(error.clone())));
                return call.failed(error);
            }
            if step >= max_steps {
                let error = ModelError::new(
                    ModelErrorKind::StepLimit,
                    format!(
                        "the model still asked for {} tool call(s) at its last step ({max_steps} allowed); none was made",
                        reply.tool_calls.len()
                    ),
                );
                call.attempt(attempt(request_digest, Some(&reply), Some(error.clone())));
                return call.failed(error);
            }
            let mut answers = Vec::with_capacity(reply.tool_calls.len());
            let mut results = Vec::with_capacity(reply.tool_calls.len());
            let mut last_refusal = None;
            for asked in &reply.tool_calls {
                let (answer, content) = answer(&cx, &dispatch, &names, asked).await;
                if let Some(error) = &answer.error
                    && answer.call.is_none()
                {
                    rejected += 1;
                    last_refusal = Some(error.clone());
                }
                answers.push(answer);
                results.push(Message::tool_result(&asked.id, content));
                if aborting(&shared) {
                    break;
                }
            }
            call.attempt(ModelAttempt {
                answers,
                ..attempt(request_digest, Some(&reply), None)
            });
            if let Some(error) = abort_error(&shared) {
                return call.failed(error);
            }
            if let Some(last) = last_refusal
                && rejected > repairs
            {
                return call.failed(exhausted(rejected as usize, last));
            }
            request.messages.push(Message::tool_calls(
                reply.text.clone(),
                reply.tool_calls.clone(),
            ));
            request.messages.extend(results);
        }
    }
}

/// The definitions the model is offered: each tool's entry of
/// `Workflow::mcp_tools()` (so that the model sees exactly what is
/// published), or, for a tool a hand-written graph does not list, the
/// set's own definition.
fn offered<W: Workflow, A, S: Toolset<W, A>>() -> Vec<ToolDefinition> {
    let published = crate::export::mcp_tools(W::GRAPH);
    S::definitions()
        .into_iter()
        .map(|own| match published.iter().find(|p| p.name == own.name) {
            Some(p) => ToolDefinition {
                name: p.name.clone(),
                description: p.description.clone(),
                input_schema: p.input_schema.clone(),
            },
            None => own,
        })
        .collect()
}

/// One model step, in its `chat` span (a sibling of the steps' tool calls,
/// under the agent's span).
async fn chat(
    model: &dyn crate::llm::Model,
    request: &ModelRequest,
    model_name: &str,
    step: u32,
) -> Result<crate::llm::ModelReply, ModelError> {
    #[cfg(feature = "tracing")]
    {
        let span = tracing::info_span!(
            "chat",
            otel.name = %format_args!("chat {model_name}"),
            gen_ai.operation.name = "chat",
            gen_ai.request.model = %model_name,
            gen_ai.output.type = "json",
            gen_ai.usage.input_tokens = tracing::field::Empty,
            gen_ai.usage.output_tokens = tracing::field::Empty,
            workflow.model.step = step,
            workflow.model.tool_calls = tracing::field::Empty,
            "error.type" = tracing::field::Empty,
        );
        let reply = tracing::Instrument::instrument(model.complete(request), span.clone()).await;
        match &reply {
            Ok(reply) => {
                span.record("gen_ai.usage.input_tokens", reply.usage.input_tokens);
                span.record("gen_ai.usage.output_tokens", reply.usage.output_tokens);
                span.record("workflow.model.tool_calls", reply.tool_calls.len());
            }
            Err(e) => {
                span.record("error.type", super::generate::error_type(e.kind));
            }
        }
        reply
    }
    #[cfg(not(feature = "tracing"))]
    {
        let _ = (model_name, step);
        model.complete(request).await
    }
}

/// What a requested call gets: the call made through `cx.call`'s path, or
/// a refusal; with the tool message's content fed back.
async fn answer<'x, W: Workflow, A: Agent<W>>(
    cx: &Context<'x, W, A>,
    dispatch: &Dispatch<'x, W, A>,
    names: &[&'static str],
    asked: &ToolCallRequest,
) -> (ToolAnswer, String) {
    let refused = |error: ModelError| {
        let content = refusal_text(&error);
        (
            ToolAnswer {
                id: asked.id.clone(),
                call: None,
                error: Some(error),
            },
            content,
        )
    };
    if !names.contains(&asked.name.as_str()) {
        let exists = W::GRAPH.tools.iter().any(|t| t.name == asked.name);
        let offered = names.join("`, `");
        return refused(ModelError::new(
            ModelErrorKind::ToolNotOffered,
            if exists {
                format!(
                    "tool `{}` is not offered to you; the tools offered: `{offered}`",
                    asked.name
                )
            } else {
                format!(
                    "there is no tool `{}`; the tools offered: `{offered}`",
                    asked.name
                )
            },
        ));
    }
    let arguments = match crate::encode::parse_json(&asked.arguments) {
        Ok(value) => value,
        Err(e) => {
            return refused(
                ModelError::new(
                    ModelErrorKind::ToolArguments,
                    format!("the arguments of `{}` are not JSON", asked.name),
                )
                .with_errors(vec![e.to_string()]),
            );
        }
    };
    let dispatched = match dispatch(cx, &asked.name, arguments) {
        Some(Ok(DispatchedCall(d))) => d,
        Some(Err(error)) => return refused(error),
        None => {
            return refused(ModelError::new(
                ModelErrorKind::ToolNotOffered,
                format!("tool `{}` is not offered to you", asked.name),
            ));
        }
    };
    match dispatched.result.await {
        Ok(text) => (
            ToolAnswer {
                id: asked.id.clone(),
                call: Some(dispatched.index),
                error: None,
            },
            text,
        ),
        Err(e) => {
            let error = ModelError::new(
                ModelErrorKind::ToolFailed,
                format!("the call failed ({}): {}", e.kind, e.message),
            );
            let content = refusal_text(&error);
            (
                ToolAnswer {
                    id: asked.id.clone(),
                    call: Some(dispatched.index),
                    error: Some(error),
                },
                content,
            )
        }
    }
}

/// Whether a call of the turn failed under `then = abort`.
fn aborting(shared: &crate::run::RunShared) -> bool {
    matches!(shared.lock().failure.as_deref(), Some((_, Then::Abort)))
}

/// The loop's error when a call of the turn failed under `then = abort`.
fn abort_error(shared: &crate::run::RunShared) -> Option<ModelError> {
    match shared.lock().failure.as_deref() {
        Some((e, Then::Abort)) => Some(ModelError::new(
            ModelErrorKind::ToolFailed,
            format!(
                "tool `{}` failed under `then = abort` ({}): {}; the turn fails, the model is not asked again",
                e.tool, e.kind, e.message
            ),
        )),
        _ => None,
    }
}

/// The text of a tool message that refuses a call or reports its failure.
fn refusal_text(error: &ModelError) -> String {
    let mut text = format!("Refused ({}): {}.", error.kind, error.message);
    for e in &error.errors {
        text.push_str("\n- ");
        text.push_str(e);
    }
    text
}

/// The error of a loop whose bad answer used up its repairs or its steps.
fn ended(rejected: u32, repairs: u32, step: u32, max_steps: u32, last: ModelError) -> ModelError {
    if rejected > repairs {
        return exhausted(rejected as usize, last);
    }
    ModelError::new(
        ModelErrorKind::StepLimit,
        format!(
            "no usable answer in {step} step(s) ({max_steps} allowed); the last: {} ({})",
            last.message, last.kind
        ),
    )
    .with_errors(last.errors)
}

/// The record of one step.
fn attempt(
    request_digest: String,
    reply: Option<&crate::llm::ModelReply>,
    error: Option<ModelError>,
) -> ModelAttempt {
    ModelAttempt {
        request_digest,
        reply: reply.map(|r| r.text.clone()),
        refusal: reply.and_then(|r| r.refusal.clone()),
        usage: reply.map_or(Usage::default(), |r| r.usage),
        error,
        tool_calls: reply.map_or_else(Vec::new, |r| r.tool_calls.clone()),
        answers: Vec::new(),
    }
}

impl<'x, W: Workflow, A: Agent<W>, T: Payload> IntoFuture for ToolLoop<'x, W, A, T> {
    type Output = Result<T, ModelError>;
    type IntoFuture = Pin<Box<dyn Future<Output = Result<T, ModelError>> + Send + 'x>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.run())
    }
}
