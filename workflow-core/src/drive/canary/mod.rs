//! Canaries: for every tool, at least one prompt run through the model's
//! tool loop (`cx.tool_loop`), with the call a model should make (the tool
//! chosen, predicates over its arguments) and a predicate over its final
//! answer. A tool's description is part of the contract a model acts on:
//! when it changes, a canary shows whether models still use the tool as
//! intended.
//!
//! Declared in Rust, typed by the tools' own input types:
//!
//! ```ignore
//! impl Canaries for deploy::Spec {
//!     fn canaries() -> Vec<Canary<Self>> {
//!         vec![Canary::new("finds_the_staging_vpc", "Which VPC is tagged staging?")
//!             .offering::<deploy::network::Agent, _>((deploy::tools::describe_vpcs,))
//!             .expects(deploy::tools::describe_vpcs, "lists page 0", |q: &VpcQuery| q.page == 0)
//!             .answer("names vpc-2stag", |a| a.contains("vpc-2stag"))]
//!     }
//! }
//! ```
//!
//! [`run`] runs them in replay mode (the model's replies and the tools'
//! responses from a [`CanaryRecording`]: deterministic, for CI) or live
//! (the executor's model and dependencies), and reports each as
//! [`Verdict::Pass`], [`Verdict::Fail`] or [`Verdict::Drift`].

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::llm::{ModelError, Prompt};
use crate::run::{Context, RunShared, Toolset};
use crate::spec::{Agent, Tool, Workflow};

mod recording;
mod report;
mod runner;

pub use recording::*;
pub use report::*;
pub use runner::*;

/// The value a canary's tool loop ends with: the model's final answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CanaryAnswer {
    /// The answer, in the model's words.
    pub answer: String,
}

/// The canaries of a workflow: implement it for the workflow's `Spec`
/// (`impl Canaries for deploy::Spec`). Every tool of the workflow must be
/// expected by at least one canary: [`run`] reports a tool without one as a
/// failure ([`uncovered`] names them).
pub trait Canaries: Workflow {
    /// The canaries, in the order they run and are reported.
    fn canaries() -> Vec<Canary<Self>>;
}

/// The tools of `W` that no canary of `canaries` expects a call of.
pub fn uncovered<W: Workflow>(canaries: &[Canary<W>]) -> Vec<&'static str> {
    W::GRAPH
        .tools
        .iter()
        .map(|t| t.name)
        .filter(|name| {
            !canaries
                .iter()
                .any(|c| c.expectations.iter().any(|e| e.tool == *name))
        })
        .collect()
}

/// What the canary's turn runs with: a context of its agent is made from it.
pub(crate) struct Harness<'x, W: Workflow> {
    pub(crate) root: &'x W::Root,
    pub(crate) deps: &'x W::Deps,
    pub(crate) shared: Arc<RunShared>,
}

impl<'x, W: Workflow> Harness<'x, W> {
    /// A context of agent `A` for one turn under no handoff's scope (its
    /// tools' authorities are checked against what `A` owns), without a
    /// journal: the canary's turn is not part of a run.
    fn context<A: Agent<W>>(&self) -> Context<'x, W, A> {
        let turn = crate::run::OwnedTurn {
            turn: crate::run::TurnView::default(),
            shared: self.shared.clone(),
            payloads: None,
        };
        Context::new(
            self.root,
            self.deps,
            crate::run::TurnRef::Owned(std::sync::Arc::new(turn)),
        )
    }
}

/// The tool loop of one canary, with the tools' values erased.
type Drive<W> = Box<
    dyn for<'x> Fn(
            Harness<'x, W>,
            Prompt,
        )
            -> Pin<Box<dyn Future<Output = Result<CanaryAnswer, ModelError>> + Send + 'x>>
        + Send
        + Sync,
>;

/// `f` as a [`Drive`]: the bound makes the closure generic over the
/// harness's lifetime, which its future borrows.
fn drive<W: Workflow, F>(f: F) -> Drive<W>
where
    F: for<'x> Fn(
            Harness<'x, W>,
            Prompt,
        )
            -> Pin<Box<dyn Future<Output = Result<CanaryAnswer, ModelError>> + Send + 'x>>
        + Send
        + Sync
        + 'static,
{
    Box::new(f)
}

/// A check of a call's arguments (their JSON text): `Err` when they do not
/// read as the tool's input.
type ArgumentCheck = Box<dyn Fn(&str) -> Result<bool, String> + Send + Sync>;

/// One call the model should make: of `tool`, with arguments that pass
/// `check`.
pub(crate) struct Expectation {
    pub(crate) tool: &'static str,
    pub(crate) what: &'static str,
    pub(crate) check: ArgumentCheck,
}

/// One predicate over the final answer.
pub(crate) struct AnswerCheck {
    pub(crate) what: &'static str,
    pub(crate) check: Box<dyn Fn(&str) -> bool + Send + Sync>,
}

/// One canary of workflow `W`: a prompt, the tools offered and the agent
/// that offers them, the calls the model should make, and predicates over
/// its final answer.
///
/// The model is asked through [`Context::tool_loop`] as agent `A` would
/// ask it ([`offering`](Self::offering)): only tools `A` is granted can be
/// offered (a compile error otherwise), and every call the model asks for
/// passes the grant, the input schema, `A`'s authority, the tool's guard,
/// fail-fast and the record, exactly as in a run.
///
/// The canary passes when the first call the model makes is of the first
/// expected tool, every [`expects`](Self::expects) is met by a call made
/// (in the order declared), the loop ends with an answer, and every
/// [`answer`](Self::answer) predicate holds on it.
pub struct Canary<W: Workflow> {
    pub(crate) name: &'static str,
    pub(crate) prompt: Prompt,
    pub(crate) agent: Option<&'static str>,
    pub(crate) offered: Vec<&'static str>,
    pub(crate) expectations: Vec<Expectation>,
    pub(crate) answers: Vec<AnswerCheck>,
    pub(crate) drive: Option<Drive<W>>,
}

impl<W: Workflow> Canary<W> {
    /// A canary named `name` (unique in its workflow: its recording is
    /// found by it) asking `prompt`. The prompt is sent as it is, with a
    /// system message that asks for the answer as JSON.
    pub fn new(name: &'static str, prompt: impl Into<Prompt>) -> Self {
        Canary {
            name,
            prompt: prompt.into(),
            agent: None,
            offered: Vec::new(),
            expectations: Vec::new(),
            answers: Vec::new(),
            drive: None,
        }
    }

    /// Offers the model `tools` as agent `A` does in its tool loop (a tuple
    /// of tool values, as for `cx.tool_loop`).
    pub fn offering<A: Agent<W>, S: Toolset<W, A>>(mut self, tools: S) -> Self {
        self.agent = Some(crate::spec::agent_name::<W>(A::INDEX));
        self.offered = S::names();
        self.drive = Some(drive::<W, _>(move |harness, prompt| {
            let cx = harness.context::<A>();
            let max_steps = A::MAX_STEPS.unwrap_or(crate::run::DEFAULT_MAX_STEPS);
            cx.tool_loop::<CanaryAnswer>(prompt, tools)
                .max_steps(max_steps)
                .into_future()
        }));
        self
    }

    /// The model should call `tool` with arguments for which `check`
    /// holds (`what` says what it checks, for the report). The first
    /// `expects` names the tool the model should choose first.
    pub fn expects<T: Tool<W>>(
        mut self,
        tool: T,
        what: &'static str,
        check: impl Fn(&T::Input) -> bool + Send + Sync + 'static,
    ) -> Self {
        let _ = tool;
        self.expectations.push(Expectation {
            tool: T::NAME,
            what,
            check: Box::new(move |arguments| {
                let input: T::Input = serde_json::from_str(arguments).map_err(|e| {
                    format!(
                        "the arguments {arguments} do not read as the input of `{}`: {e}",
                        T::NAME
                    )
                })?;
                Ok(check(&input))
            }),
        });
        self
    }

    /// The model's final answer must satisfy `check` (`what` says what it
    /// checks, for the report).
    pub fn answer(
        mut self,
        what: &'static str,
        check: impl Fn(&str) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.answers.push(AnswerCheck {
            what,
            check: Box::new(check),
        });
        self
    }

    /// The canary's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The agent whose tool loop it runs as (`None` until
    /// [`offering`](Self::offering)).
    pub fn agent(&self) -> Option<&'static str> {
        self.agent
    }

    /// The tools whose calls it expects, in order, without repeats.
    pub fn tools(&self) -> Vec<&'static str> {
        let mut tools: Vec<&'static str> = Vec::new();
        for e in &self.expectations {
            if !tools.contains(&e.tool) {
                tools.push(e.tool);
            }
        }
        tools
    }

    /// What is wrong with the declaration itself, if anything: no tool
    /// offered, no call expected, or a call expected of a tool not offered.
    pub fn problem(&self) -> Option<String> {
        if self.drive.is_none() {
            return Some(
                "it offers no tool: declare the tools and the agent with `.offering::<Agent, _>((tools::..,))`"
                    .into(),
            );
        }
        if self.expectations.is_empty() {
            return Some(
                "it expects no call: declare the call a model should make with `.expects(tool, what, predicate)`"
                    .into(),
            );
        }
        if let Some(e) = self
            .expectations
            .iter()
            .find(|e| !self.offered.contains(&e.tool))
        {
            return Some(format!(
                "it expects a call of `{}`, which it does not offer (it offers `{}`)",
                e.tool,
                self.offered.join("`, `")
            ));
        }
        None
    }
}

/// The system message of every canary's prompt.
pub(crate) const SYSTEM: &str = "Use the tools offered to answer. When you are done, reply with a JSON object {\"answer\": \"...\"} holding your answer.";
