//! The traits a workflow implements (by macro or by hand) and what an agent
//! sees during its turn (`Context`); the runtime and sessions drive them.

use std::future::Future;
use std::marker::PhantomData;
use std::time::Duration;

use crate::contract::{Authority, ContractView, Payload, Scope};
use crate::error::{Reject, RunError, ToolError};
use crate::graph::{Condition, Graph};
use crate::runtime::{Runtime, agent_name};
use crate::schema::SchemaSet;

/// A workflow definition: its graph, its state and how a state takes a turn.
///
/// `#[workflow]` implements this for the generated `Spec` type; the
/// `hand_written` example implements it by hand.
pub trait Workflow: Sized + Send + Sync + 'static {
    /// The entry agent's input.
    type Input: Payload;
    /// What a run ends with.
    type Output: Payload;
    /// The invariants pinned for every run (`#[invariants]`), or `()`.
    type Root: Send + Sync + 'static;
    /// What tools need to do their work (clients, fakes), or `()`.
    type Deps: Send + Sync + 'static;
    /// Which agent runs next, with its input.
    type State: Send + 'static;

    /// The static description of the workflow.
    const GRAPH: &'static Graph;

    /// Records the transfer of the workflow input to the entry agent.
    fn start(input: Self::Input, run: &mut Runtime<'_, Self>) -> Result<Self::State, RunError>;

    /// Runs the agent that `state` names, through [`Runtime::turn`].
    fn turn<'a, 'x>(
        state: Self::State,
        run: &'a mut Runtime<'x, Self>,
    ) -> impl Future<Output = Result<Transition<Self>, RunError>> + Send + 'a;

    /// Runs turns from `state` to the end of the run (a loop over
    /// [`turn`](Self::turn)).
    fn run_to_end<'a, 'x>(
        state: Self::State,
        run: &'a mut Runtime<'x, Self>,
    ) -> impl Future<Output = Result<Self::Output, RunError>> + Send + 'a {
        async move {
            let mut state = state;
            loop {
                match Self::turn(state, run).await? {
                    Transition::To(next) => state = next,
                    Transition::End(output) => return Ok(output),
                }
            }
        }
    }

    /// The agent index that `state` names.
    fn agent_of(state: &Self::State) -> u16;

    /// The state in which agent `agent` runs with the input recorded in
    /// `payload` (to resume a run from its ledger records). The default says
    /// the workflow cannot be resumed; generated workflows can.
    fn restore(agent: u16, payload: &RecordedPayload<'_>) -> Result<Self::State, String> {
        let _ = payload;
        Err(format!(
            "workflow `{}` cannot restore agent {agent}: it implements no `Workflow::restore`",
            Self::GRAPH.name
        ))
    }

    /// Adds the schema of every payload, input and output to `set`.
    fn schemas(set: &mut SchemaSet);
}

/// A payload as a ledger recorded it, to decode into the receiver's input.
pub struct RecordedPayload<'a> {
    pub(crate) format: crate::canonical::Format,
    pub(crate) bytes: &'a [u8],
}

impl RecordedPayload<'_> {
    /// The recorded value, decoded as `T`.
    pub fn decode<T: serde::de::DeserializeOwned>(&self) -> Result<T, String> {
        crate::canonical::decode(self.format, self.bytes)
    }
}

/// What a turn leads to.
pub enum Transition<W: Workflow> {
    /// Another agent's turn.
    To(W::State),
    /// The end of the run.
    End(W::Output),
}

/// An agent of workflow `W`.
pub trait Agent<W: Workflow>: Sized + Send + Sync + 'static {
    /// The agent's index in [`Graph::agents`].
    const INDEX: u16;
    /// How long the body may take.
    const TIMEOUT: Option<Duration> = None;
    /// The agent's input.
    type Input: Send;
    /// Where the agent may hand off to: an enum whose variants carry exactly
    /// each receiver's input type.
    type Next: Route<W>;

    /// The contract parts of the input that the receipt checks; `None` for
    /// an input that is not a handoff (the workflow input).
    fn contract(_input: &Self::Input) -> Option<ContractView<'_>> {
        None
    }

    /// Evaluates the pre-conditions; the first that fails is returned.
    fn pre(_input: &Self::Input, _cx: &Context<'_, W, Self>) -> Result<(), &'static Condition> {
        Ok(())
    }

    /// Evaluates the post-conditions on the output; the first that fails is returned.
    fn post(_out: &Self::Next, _cx: &Context<'_, W, Self>) -> Result<(), &'static Condition> {
        Ok(())
    }

    /// The agent's body.
    fn run(
        input: Self::Input,
        cx: Context<'_, W, Self>,
    ) -> impl Future<Output = Result<Self::Next, Reject>> + Send;
}

/// A `Next` value: records the transfer it makes and yields the next state.
pub trait Route<W: Workflow>: Send + Sized {
    /// Records the transfer on `run` and returns where the run goes.
    fn route(self, run: &mut Runtime<'_, W>) -> Result<Transition<W>, RunError>;
}

/// A tool that agents of `W` can be granted.
pub trait Tool<W: Workflow>: Copy + Send + Sync + 'static {
    /// The tool's name.
    const NAME: &'static str;
    /// Its input.
    type Input: Payload;
    /// Its output.
    type Output: Payload;
    /// Calls the tool.
    fn call(
        self,
        input: Self::Input,
        deps: &W::Deps,
    ) -> impl Future<Output = Result<Self::Output, ToolError>> + Send;
}

/// Marks that agent `Self` is granted tool `T`; generated from `tools = [...]`.
#[diagnostic::on_unimplemented(
    message = "agent `{Self}` is not granted tool `{T}`",
    label = "tool not granted",
    note = "add the tool to `tools = [...]` in the agent's `#[agent(..)]` attribute, or hand the work to an agent that has it"
)]
pub trait Granted<T> {}

/// What an agent sees during its turn: the pinned invariants, its granted
/// tools and its owned authorities, nothing else.
pub struct Context<'x, W: Workflow, A> {
    pub(crate) root: &'x W::Root,
    pub(crate) deps: &'x W::Deps,
    pub(crate) hop: u32,
    pub(crate) run_id: u64,
    pub(crate) agent: PhantomData<fn() -> A>,
}

impl<'x, W: Workflow, A: Agent<W>> Context<'x, W, A> {
    /// The invariants pinned for this run.
    pub fn root(&self) -> &'x W::Root {
        self.root
    }

    /// The agent's own name.
    pub fn agent_name(&self) -> &'static str {
        agent_name::<W>(A::INDEX)
    }

    /// The authorities this agent owns.
    pub fn owned_authorities(&self) -> &'static [&'static str] {
        W::GRAPH
            .agents
            .get(A::INDEX as usize)
            .map_or(&[], |a| a.owns)
    }

    /// Agent turns completed before this one.
    pub fn hop(&self) -> u32 {
        self.hop
    }

    /// The run's id.
    pub fn run_id(&self) -> u64 {
        self.run_id
    }

    /// A scope delegating `authority` to a receiver (which must own it).
    pub fn delegate<Au: Authority>(&self, authority: Au) -> Scope<Au> {
        Scope::new(authority)
    }

    /// Calls a tool this agent is granted.
    pub fn call<T>(&self, tool: T, input: T::Input) -> ToolCall<'x, T::Output>
    where
        T: Tool<W>,
        A: Granted<T>,
    {
        #[cfg(feature = "tracing")]
        let span = tracing::info_span!(
            "execute_tool",
            otel.name = %format_args!("execute_tool {}", T::NAME),
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = T::NAME,
            gen_ai.conversation.id = self.run_id,
            "error.type" = tracing::field::Empty,
        );
        #[cfg(feature = "tracing")]
        let call = tracing::Instrument::instrument(tool.call(input, self.deps), span.clone());
        #[cfg(not(feature = "tracing"))]
        let call = tool.call(input, self.deps);
        let call = crate::telemetry::timed_tool::<W, T, _>(call);
        ToolCall {
            call: Box::pin(call),
            #[cfg(feature = "tracing")]
            span,
        }
    }
}

/// A tool call under way: `cx.call(tool, input).await`.
///
/// A named future (not `impl Future`), so that an ungranted tool is reported
/// once, at the call, and not again at the `.await`.
#[must_use = "a tool call does nothing until it is awaited"]
pub struct ToolCall<'x, O> {
    call: std::pin::Pin<Box<dyn Future<Output = Result<O, ToolError>> + Send + 'x>>,
    #[cfg(feature = "tracing")]
    span: tracing::Span,
}

impl<O> Future for ToolCall<'_, O> {
    type Output = Result<O, ToolError>;
    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let poll = self.call.as_mut().poll(cx);
        #[cfg(feature = "tracing")]
        if let std::task::Poll::Ready(Err(_)) = &poll {
            self.span.record("error.type", "tool_error");
        }
        poll
    }
}

// Two grants every agent has, of tools that cannot exist: with at least two
// candidates the compiler never guesses the tool of `cx.call` from a single
// grant, and an ungranted tool is reported as such.
#[doc(hidden)]
pub enum NoTool {}
#[doc(hidden)]
pub enum NoToolEither {}
impl<A> Granted<NoTool> for A {}
impl<A> Granted<NoToolEither> for A {}

impl<W: Workflow, A> Clone for Context<'_, W, A> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<W: Workflow, A> Copy for Context<'_, W, A> {}
