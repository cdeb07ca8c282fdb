//! Models without a network: a script of replies, and the replies a run
//! recorded.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard};

use super::{Model, ModelError, ModelErrorKind, ModelFuture, ModelReply, ModelRequest};
use crate::spec::TurnRecord;
use crate::spec::Usage;

/// One step of a script.
#[derive(Debug, Clone)]
enum Step {
    /// A reply whose usage is estimated when it is served.
    Text(String),
    /// A reply asking for tool calls, its usage estimated when served.
    Calls(Vec<super::ToolCallRequest>),
    /// A reply as given.
    Reply(ModelReply),
    /// A failure.
    Fail(ModelError),
}

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every write is one push or one pop: a panic elsewhere leaves the
    // state consistent.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Tokens of `text`, estimated like the executor's `ApproxTokens`: one per
/// four bytes.
fn approx_tokens(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

/// A model that replies from a list, in order, whatever it is asked, and
/// keeps every request (for tests and offline examples).
///
/// ```
/// use workflow_core::llm::{Model, ModelRequest, ScriptedModel};
/// let model = ScriptedModel::new().reply(r#"{"n": 1}"#).refuse("not today");
/// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// let request = ModelRequest { model: None, messages: vec![], response_format: None, tools: vec![] };
/// let first = rt.block_on(model.complete(&request)).unwrap();
/// assert_eq!(first.text, r#"{"n": 1}"#);
/// assert!(rt.block_on(model.complete(&request)).unwrap().refusal.is_some());
/// assert!(rt.block_on(model.complete(&request)).is_err()); // the script is over
/// assert_eq!(model.requests().len(), 3);
/// ```
#[derive(Debug)]
pub struct ScriptedModel {
    name: String,
    steps: Mutex<VecDeque<Step>>,
    requests: Mutex<Vec<ModelRequest>>,
}

impl Default for ScriptedModel {
    fn default() -> Self {
        ScriptedModel::new()
    }
}

impl ScriptedModel {
    /// An empty script, named `scripted`.
    pub fn new() -> Self {
        ScriptedModel::named("scripted")
    }

    /// An empty script with a model name.
    pub fn named(name: impl Into<String>) -> Self {
        ScriptedModel {
            name: name.into(),
            steps: Mutex::new(VecDeque::new()),
            requests: Mutex::new(Vec::new()),
        }
    }

    /// Then a reply saying `text`, its usage estimated at one token per
    /// four bytes of the request's messages and of the reply.
    pub fn reply(self, text: impl Into<String>) -> Self {
        self.step(Step::Text(text.into()))
    }

    /// Then `reply`, as given (its usage included).
    pub fn reply_with(self, reply: ModelReply) -> Self {
        self.step(Step::Reply(reply))
    }

    /// Then a reply asking for tool `calls` (no text), its usage estimated
    /// like [`reply`](Self::reply)'s from the calls' arguments.
    pub fn call_tools(self, calls: impl IntoIterator<Item = super::ToolCallRequest>) -> Self {
        self.step(Step::Calls(calls.into_iter().collect()))
    }

    /// Then a refusal saying why.
    pub fn refuse(self, why: impl Into<String>) -> Self {
        self.step(Step::Reply(ModelReply::refusal(why)))
    }

    /// Then a failure.
    pub fn fail(self, error: ModelError) -> Self {
        self.step(Step::Fail(error))
    }

    fn step(self, step: Step) -> Self {
        locked(&self.steps).push_back(step);
        self
    }

    /// Every request served so far, in order.
    pub fn requests(&self) -> Vec<ModelRequest> {
        locked(&self.requests).clone()
    }

    /// How many steps are left.
    pub fn remaining(&self) -> usize {
        locked(&self.steps).len()
    }

    fn serve(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        locked(&self.requests).push(request.clone());
        let step = locked(&self.steps).pop_front();
        let asked: u64 = request
            .messages
            .iter()
            .map(|m| approx_tokens(&m.content))
            .sum();
        match step {
            Some(Step::Text(text)) => {
                let usage = Usage::tokens(asked, approx_tokens(&text));
                Ok(ModelReply {
                    text,
                    refusal: None,
                    usage,
                    model: Some(self.name.clone()),
                    tool_calls: Vec::new(),
                })
            }
            Some(Step::Calls(calls)) => {
                let written: u64 = calls
                    .iter()
                    .map(|c| approx_tokens(&c.name) + approx_tokens(&c.arguments))
                    .sum();
                Ok(ModelReply {
                    text: String::new(),
                    refusal: None,
                    usage: Usage::tokens(asked, written),
                    model: Some(self.name.clone()),
                    tool_calls: calls,
                })
            }
            Some(Step::Reply(reply)) => Ok(reply),
            Some(Step::Fail(error)) => Err(error),
            None => Err(ModelError::new(
                ModelErrorKind::NoReply,
                format!(
                    "the scripted model has no reply left ({} request(s) served)",
                    locked(&self.requests).len() - 1
                ),
            )),
        }
    }
}

impl Model for ScriptedModel {
    fn name(&self) -> &str {
        &self.name
    }

    fn complete<'a>(&'a self, request: &'a ModelRequest) -> ModelFuture<'a> {
        let served = self.serve(request);
        Box::pin(std::future::ready(served))
    }
}

/// A model that serves the replies a run recorded with its turns
/// ([`ModelCallRecord`](super::ModelCallRecord)), matched by request
/// digest: replaying the run asks the same requests and gets the same
/// replies (and usage, and failures), without a network.
///
/// A request that was not recorded is a [`ModelErrorKind::NoReply`]: the
/// replay has diverged from the record.
#[derive(Debug)]
pub struct RecordedModel {
    name: String,
    replies: Mutex<HashMap<String, VecDeque<Result<ModelReply, ModelError>>>>,
}

impl RecordedModel {
    /// The replies recorded in `turns`, in order.
    pub fn from_turns<'a>(turns: impl IntoIterator<Item = &'a TurnRecord>) -> Self {
        RecordedModel::from_calls(turns.into_iter().flat_map(|t| &t.model_calls))
    }

    /// The replies recorded in model calls `calls` (a canary's recording),
    /// in order.
    pub fn from_calls<'a>(calls: impl IntoIterator<Item = &'a super::ModelCallRecord>) -> Self {
        let mut replies: HashMap<String, VecDeque<Result<ModelReply, ModelError>>> = HashMap::new();
        let mut name = None;
        {
            for call in calls {
                name.get_or_insert_with(|| call.model.to_string());
                for attempt in &call.attempts {
                    let served = match (&attempt.reply, &attempt.error) {
                        (Some(text), _) => Ok(ModelReply {
                            text: text.clone(),
                            refusal: attempt.refusal.clone(),
                            usage: attempt.usage,
                            model: Some(call.model.to_string()),
                            tool_calls: attempt.tool_calls.clone(),
                        }),
                        (None, Some(error)) => Err(error.clone()),
                        (None, None) => Err(ModelError::transport(
                            "the record holds neither a reply nor an error",
                        )),
                    };
                    replies
                        .entry(attempt.request_digest.clone())
                        .or_default()
                        .push_back(served);
                }
            }
        }
        RecordedModel {
            name: name.unwrap_or_else(|| "recorded".to_owned()),
            replies: Mutex::new(replies),
        }
    }

    /// The replies recorded in a run's ledger records.
    pub fn from_ledger(records: &[crate::ledger::LedgerRecord]) -> Self {
        RecordedModel::from_turns(records.iter().filter_map(|r| r.turn.as_ref()))
    }

    /// How many recorded replies have not been served.
    pub fn remaining(&self) -> usize {
        locked(&self.replies).values().map(VecDeque::len).sum()
    }
}

impl Model for RecordedModel {
    fn name(&self) -> &str {
        &self.name
    }

    fn complete<'a>(&'a self, request: &'a ModelRequest) -> ModelFuture<'a> {
        let digest = request.digest();
        let served = locked(&self.replies)
            .get_mut(&digest)
            .and_then(VecDeque::pop_front)
            .unwrap_or_else(|| {
                Err(ModelError::new(
                    ModelErrorKind::NoReply,
                    format!(
                        "no recorded reply for request {digest}: the replay diverged from the record"
                    ),
                ))
            });
        Box::pin(std::future::ready(served))
    }
}
