//! The traits a workflow implements, by macro or by hand: `Workflow`,
//! `Agent`, `Route`, `Tool`, and the grant marker `Granted`.
//!
//! The one import against the layers' direction is here on purpose: the
//! traits' methods take the run layer's `Runtime` and `Context`, because a
//! generated turn drives the runtime (see the book's architecture chapter).

use crate::run::Runtime;
use crate::spec::{Condition, Graph};
use crate::spec::{ContractView, Payload, PayloadFormat};
use crate::spec::{Reject, RunError, ToolError};
use std::future::Future;
use std::time::Duration;

use crate::spec::SchemaSet;
use crate::spec::{Effect, FailFast, Fallback};

use crate::run::Context;
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
    type Root: crate::spec::Invariants;
    /// What tools need to do their work (clients, fakes), or `()`.
    type Deps: Send + Sync + 'static;
    /// Which agent runs next, with its input.
    type State: Send + 'static;

    /// The static description of the workflow.
    const GRAPH: &'static Graph;

    /// The workflow's fan-outs, as the manifest and the diagram show them
    /// (none by default: a hand-written workflow lists its own).
    const FORKS: &'static [crate::spec::ForkInfo] = &[];

    /// Records the transfer of the workflow input to the entry agent.
    fn start(input: Self::Input, run: &mut Runtime<'_, Self>) -> Result<Self::State, RunError>;

    /// Runs the agent that `state` names, through [`Runtime::turn`].
    fn turn<'a, 'x>(
        state: Self::State,
        run: &'a mut Runtime<'x, Self>,
    ) -> impl Future<Output = Result<Transition<Self>, RunError>> + Send + 'a;

    /// Runs turns from `state` to the end of the run: a loop over
    /// [`turn`](Self::turn), a turn's error handed to
    /// [`Runtime::after_error`] (a rejection routed back to its sender goes
    /// on from the sender). Generated workflows run their turns in one loop
    /// of their own that does the same, without a new future per turn.
    fn run_to_end<'a, 'x>(
        state: Self::State,
        run: &'a mut Runtime<'x, Self>,
    ) -> impl Future<Output = Result<Self::Output, RunError>> + Send + 'a {
        async move {
            let mut state = state;
            loop {
                match Self::turn(state, run).await {
                    Ok(Transition::To(next)) => state = next,
                    Ok(Transition::End(output)) => return Ok(output),
                    Err(e) => state = run.after_error(e)?,
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

    /// The state in which the branches of agent `agent`'s fan-out run, with
    /// the inputs their start records hold (`inputs`, one per branch, in
    /// branch order): to resume a run cut inside that fan-out. `Ok(None)`
    /// when `inputs` are fewer than the fan-out's branches (the crash came
    /// while the starts were being recorded): the fan-out agent's turn then
    /// runs again. The default says the workflow cannot; generated
    /// workflows can.
    fn restore_fork(
        agent: u16,
        inputs: &[RecordedPayload<'_>],
    ) -> Result<Option<Self::State>, String> {
        let _ = inputs;
        Err(format!(
            "workflow `{}` cannot restore the fan-out of agent {agent}: it implements no `Workflow::restore_fork`",
            Self::GRAPH.name
        ))
    }

    /// The branches' verdicts a join agent's turn in `state` received
    /// (its agent's [`Agent::verdicts`] of its input; none for any other
    /// turn): read when a run resumes at a join's record, so the join's
    /// handoff is held to the disagreement as in the run that recorded it.
    /// Generated workflows implement it; the default is none.
    fn state_verdicts(state: &Self::State) -> Vec<crate::spec::BranchVerdict> {
        let _ = state;
        Vec::new()
    }

    /// Writes the canonical bytes of the input that `state` carries (to
    /// record a payload a person edited at an escalation). The default says
    /// the workflow cannot; generated workflows can.
    fn encode_state(state: &Self::State, out: &mut Vec<u8>) -> Result<PayloadFormat, String> {
        let _ = (state, out);
        Err(format!(
            "workflow `{}` cannot encode its states: it implements no `Workflow::encode_state`",
            Self::GRAPH.name
        ))
    }

    /// Adds the schema of every payload, input and output to `set`.
    fn schemas(set: &mut SchemaSet);
}

/// A payload as a ledger recorded it, to decode into the receiver's input
/// (`decode`, defined with the canonical encoding).
pub struct RecordedPayload<'a> {
    pub(crate) format: crate::spec::PayloadFormat,
    pub(crate) bytes: &'a [u8],
}

/// What a turn leads to.
pub enum Transition<W: Workflow> {
    /// Another agent's turn.
    To(W::State),
    /// The end of the run.
    End(W::Output),
}

/// The post-condition an [`Agent`] impl breaks when it sets
/// `POST_READS_CONTEXT` to `false` without its own `post_without_context`:
/// its turns fail, and say why, rather than skip its checks.
#[doc(hidden)]
pub static POST_WITHOUT_CONTEXT_MISSING: Condition = Condition {
    expr: "POST_READS_CONTEXT = false",
    message: "the agent's impl sets `POST_READS_CONTEXT` to false without a `post_without_context` of its own",
};

/// A writer of a payload's record bytes (MessagePack) that may give up
/// (`false`, leaving what it wrote for the caller to cut off): see
/// [`Agent::WRITE_INPUT`].
#[doc(hidden)]
pub type PayloadWriter<P> = fn(&mut Vec<u8>, &P) -> bool;

/// An agent of workflow `W`.
pub trait Agent<W: Workflow>: Sized + Send + Sync + 'static {
    /// The agent's index in [`Graph::agents`].
    const INDEX: u16;
    /// How long the body may take.
    const TIMEOUT: Option<Duration> = None;
    /// The model steps each tool loop of the agent's turns may take
    /// (`#[agent(max_steps = N)]`), unless the loop sets its own
    /// (`ToolLoop::max_steps`); `None`: the library's default,
    /// `DEFAULT_MAX_STEPS`.
    const MAX_STEPS: Option<u32> = None;
    /// The agent's input.
    type Input: Send;
    /// The input's direct writer of its record bytes: MessagePack written
    /// without serde's data model, byte for byte what the serde path
    /// writes, `false` when it gives up (the input is then encoded through
    /// serde, which refuses it with the reason). Generated code sets it for
    /// an input type that has one (a `#[handoff]` struct in serde's plain
    /// form); `None`, the default, records through serde.
    #[doc(hidden)]
    const WRITE_INPUT: Option<PayloadWriter<Self::Input>> = None;
    /// Where the agent may hand off to: an enum whose variants carry exactly
    /// each receiver's input type.
    type Next: Route<W>;

    /// The contract parts of the input that the receipt checks; `None` for
    /// an input that is not a handoff (the workflow input).
    fn contract(_input: &Self::Input) -> Option<ContractView<'_>> {
        None
    }

    /// The input's fields pinned to a root invariant (`#[pin(root_field)]`
    /// on a handoff field, compared with `==` on the typed values): the
    /// first that differs, as `(the pin's name, what differs)`. Checked at
    /// the receipt, right before the pre-conditions.
    fn pinned(_input: &Self::Input, _root: &W::Root) -> Result<(), (&'static str, String)> {
        Ok(())
    }

    /// Evaluates the pre-conditions; the first that fails is returned.
    fn pre(_input: &Self::Input, _cx: &Context<'_, W, Self>) -> Result<(), &'static Condition> {
        Ok(())
    }

    /// Whether [`post`](Self::post) checks anything. Generated code sets it
    /// to `false` for an agent without `#[post]` conditions, and the runtime
    /// then builds no context for them; the default, `true`, always calls
    /// `post`.
    const HAS_POST: bool = true;

    /// Evaluates the post-conditions on the output; the first that fails is
    /// returned. The default checks
    /// [`post_without_context`](Self::post_without_context) when
    /// [`POST_READS_CONTEXT`](Self::POST_READS_CONTEXT) is `false` (the
    /// generated conditions that do not read the context), and nothing
    /// otherwise.
    fn post(out: &Self::Next, _cx: &Context<'_, W, Self>) -> Result<(), &'static Condition> {
        if Self::POST_READS_CONTEXT {
            Ok(())
        } else {
            Self::post_without_context(out)
        }
    }

    /// Whether [`post`](Self::post) may read its context. Generated code
    /// sets it to `false` when no `#[post]` condition names the context,
    /// and the runtime then calls
    /// [`post_without_context`](Self::post_without_context) instead, with
    /// no context built; the default, `true`, always calls `post`.
    #[doc(hidden)]
    const POST_READS_CONTEXT: bool = true;

    /// The post-conditions, for an agent whose conditions do not read the
    /// context ([`POST_READS_CONTEXT`](Self::POST_READS_CONTEXT) `false`):
    /// the same checks as [`post`](Self::post). Not called otherwise. The
    /// two are set together; an impl that sets the flag alone fails every
    /// turn with [`POST_WITHOUT_CONTEXT_MISSING`] rather than skip its
    /// checks.
    #[doc(hidden)]
    fn post_without_context(_out: &Self::Next) -> Result<(), &'static Condition> {
        Err(&POST_WITHOUT_CONTEXT_MISSING)
    }

    /// For a join agent: the verdict of every branch in `input` that ended
    /// `Done` with a `#[verdict]`, in branch order (generated for a join
    /// whose branch output types derive [`Verdict`](crate::spec::Verdict));
    /// the default, for any other agent, is none. The run reads it when it
    /// records the join, before the join agent's body runs, and holds the
    /// join's handoff to it ([`RejectReason::VerdictDropped`](crate::spec::RejectReason::VerdictDropped)).
    fn verdicts(_input: &Self::Input) -> Vec<crate::spec::BranchVerdict> {
        Vec::new()
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
    /// The authority a call needs (checked against the scope of the handoff
    /// the calling agent works under, or, under none, against the
    /// authorities the agent owns), if any.
    const NEEDS: Option<&'static str> = None;
    /// What the tool does to the world.
    const EFFECT: Effect = Effect::Read;
    /// What happens when a call fails.
    const FALLBACK: Fallback = Fallback::ABORT;
    /// The name of the tool's guard (`#[tool(guard = path)]`), if it has
    /// one: [`guard`](Self::guard) is then checked before every live call.
    const GUARD: Option<&'static str> = None;
    /// Its input.
    type Input: Payload;
    /// Its output: fails fast when empty, partial or a failure status.
    type Output: Payload + FailFast;
    /// The tool's guard over its input and the run's root invariants,
    /// checked before the tool acts when [`GUARD`](Self::GUARD) is set: an
    /// `Err` is a [`ToolErrorKind::Refused`](crate::ToolErrorKind) error,
    /// recorded with the turn's tool calls, and the tool's body never runs.
    /// Accepts everything unless overridden.
    fn guard(input: &Self::Input, root: &W::Root) -> Result<(), String> {
        let _ = (input, root);
        Ok(())
    }
    /// Calls the tool. Only `cx.call` can: it alone makes the
    /// [`ToolCallPermit`], after the grant, the scope and the budget are
    /// checked, and it records the call; an agent cannot call a tool around
    /// them.
    fn call(
        self,
        input: Self::Input,
        deps: &W::Deps,
        permit: ToolCallPermit<Self>,
    ) -> impl Future<Output = Result<Self::Output, ToolError>> + Send;
}

/// What `Tool::call` takes so that only `cx.call` calls a tool: a value no
/// code outside this crate can make (its field is private and it has no
/// public constructor), for one tool type `T` (a tool's body cannot hand
/// its permit to another tool). Implement `Tool::call` with a parameter of
/// this type; you never make one.
#[derive(Debug)]
pub struct ToolCallPermit<T> {
    _sealed: std::marker::PhantomData<fn() -> T>,
}

impl<T> ToolCallPermit<T> {
    /// The permit for a call `cx.call` has checked.
    pub(crate) fn new() -> Self {
        ToolCallPermit {
            _sealed: std::marker::PhantomData,
        }
    }
}

/// Marks that agent `Self` is granted tool `T`; generated from `tools = [...]`.
#[diagnostic::on_unimplemented(
    message = "agent `{Self}` is not granted tool `{T}`",
    label = "tool not granted",
    note = "add the tool to `tools = [...]` in the agent's `#[agent(..)]` attribute, or hand the work to an agent that has it"
)]
pub trait Granted<T> {}

// Two grants every agent has, of tools that cannot exist: with at least two
// candidates the compiler never guesses the tool of `cx.call` from a single
// grant, and an ungranted tool is reported as such.
#[doc(hidden)]
pub enum NoTool {}

#[doc(hidden)]
pub enum NoToolEither {}

impl<A> Granted<NoTool> for A {}

impl<A> Granted<NoToolEither> for A {}

/// The name of agent `index` of `W` (`?` for an index a hand-written
/// workflow got wrong: a name is never worth a panic).
pub(crate) fn agent_name<W: Workflow>(index: u16) -> &'static str {
    W::GRAPH.agents.get(index as usize).map_or("?", |a| a.name)
}
