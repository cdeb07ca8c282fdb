//! A hand-written workflow (two agents, three tools, both agents escalating
//! the rejections at their receipts) for what generated workflows reach only
//! in part:
//!
//! - a tool call from a turn under no handoff's scope (the entry agent, or an
//!   agent whose input has no contract) runs only when the calling agent owns
//!   the authority the tool needs;
//! - a run-wide limit (loop bound, budget, deadline) or a scope the receiver
//!   does not own, at a receipt that escalates, stops the run and suspends
//!   nothing.
//!
//! Each test asserts the side effect that did not happen and what was
//! recorded.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use workflow_core::tool::ToolOutcome;
use workflow_core::{
    Agent, AgentInfo, Budget, Context, ContractView, EdgeInfo, Executor, Granted, Graph, Node,
    OnReject, Receipt, Reject, RejectReason, Route, RunError, Runtime, SchemaSet, Tool,
    ToolCallPermit, ToolError, ToolErrorKind, Transition, Usage, Workflow,
};

use crate::fixtures::{assert_rejected, receipts, route};

/// What a run does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Task {
    /// `keeper` calls `open_door` (needs `Door`, which it owns), then ends.
    OwnTool,
    /// `keeper` calls `launch` (needs `Launch`, which `guard` owns) and
    /// ignores the refusal.
    ForeignTool,
    /// `keeper` calls `orphan` (needs `Vault`, which no agent owns).
    OrphanTool,
    /// `guard`, whose input has no contract, calls `launch` (it owns `Launch`).
    GuardOwnTool,
    /// `guard`, whose input has no contract, calls `open_door` (`keeper` owns `Door`).
    GuardForeignTool,
    /// `keeper` hands to `guard` a scope over `Door`, which `guard` does not own.
    ForeignScope,
    /// `keeper` spends 100 tokens, then hands to `guard`.
    Spend,
    /// `keeper` and `guard` hand the task back and forth (`guard -> keeper`
    /// is bounded to one use).
    Loop,
}

/// How many times each tool ran (its side effect).
#[derive(Debug, Default)]
pub struct Doors {
    opened: AtomicU32,
    launched: AtomicU32,
    vault: AtomicU32,
}

impl Doors {
    /// `[open_door, launch, orphan]` runs.
    fn runs(&self) -> [u32; 3] {
        [&self.opened, &self.launched, &self.vault].map(|n| n.load(Ordering::SeqCst))
    }
}

fn schema_name() -> Cow<'static, str> {
    <Task as JsonSchema>::schema_name()
}

const fn agent(name: &'static str, owns: &'static [&'static str]) -> AgentInfo {
    AgentInfo {
        name,
        input: "Task",
        input_schema: schema_name,
        owns,
        tools: &["open_door", "launch", "orphan"],
        timeout_ms: None,
        pre: &[],
        post: &[],
        on_reject: OnReject::Escalate,
    }
}

const fn edge(from: Node, to: Node, bound: Option<u32>) -> EdgeInfo {
    EdgeInfo {
        from,
        to,
        payload: "Task",
        payload_schema: schema_name,
        bound,
    }
}

const KEEPER: Node = Node::Agent(0);
const GUARD: Node = Node::Agent(1);

static GRAPH: Graph = Graph {
    name: "keys",
    agents: &[agent("keeper", &["Door"]), agent("guard", &["Launch"])],
    edges: &[
        edge(Node::Start, KEEPER, None),
        edge(KEEPER, GUARD, None),
        edge(GUARD, KEEPER, Some(1)),
        edge(KEEPER, Node::End, None),
        edge(GUARD, Node::End, None),
    ],
    tools: &[],
    input: "Task",
    output: "Task",
    max_hops: 10,
};

const KEEPER_TO_GUARD: u16 = GRAPH.edge_index(KEEPER, GUARD);
const GUARD_TO_KEEPER: u16 = GRAPH.edge_index(GUARD, KEEPER);
const KEEPER_TO_END: u16 = GRAPH.edge_index(KEEPER, Node::End);
const GUARD_TO_END: u16 = GRAPH.edge_index(GUARD, Node::End);

struct Keys;

enum State {
    Keeper(Task),
    Guard(Task),
}

/// Opens a door (needs `Door`).
#[derive(Clone, Copy)]
struct OpenDoor;
/// Launches (needs `Launch`).
#[derive(Clone, Copy)]
struct Launch;
/// Opens the vault (needs `Vault`, which nobody owns).
#[derive(Clone, Copy)]
struct Orphan;

macro_rules! tool {
    ($tool:ident, $name:literal, $needs:literal, $counter:ident) => {
        impl Tool<Keys> for $tool {
            const NAME: &'static str = $name;
            const NEEDS: Option<&'static str> = Some($needs);
            type Input = ();
            type Output = u32;
            async fn call(
                self,
                (): (),
                doors: &Arc<Doors>,
                _: ToolCallPermit<Self>,
            ) -> Result<u32, ToolError> {
                Ok(doors.$counter.fetch_add(1, Ordering::SeqCst) + 1)
            }
        }
    };
}
tool!(OpenDoor, "open_door", "Door", opened);
tool!(Launch, "launch", "Launch", launched);
tool!(Orphan, "orphan", "Vault", vault);

struct Keeper;
struct Guard;

// Both agents are granted every tool: the grant is not what refuses a call.
impl Granted<OpenDoor> for Keeper {}
impl Granted<Launch> for Keeper {}
impl Granted<Orphan> for Keeper {}
impl Granted<OpenDoor> for Guard {}
impl Granted<Launch> for Guard {}
impl Granted<Orphan> for Guard {}

static NO_STOP: workflow_core::StopWhen = workflow_core::StopWhen::NONE;
static NO_OPEN: Vec<workflow_core::Uncertainty> = Vec::new();
static NO_EVIDENCE: Vec<workflow_core::Evidence> = Vec::new();

/// Where a turn of `keeper` or `guard` goes.
enum Next {
    Keeper(Task),
    Guard(Task),
    End(Task, u16),
}

impl Route<Keys> for Next {
    fn route(self, run: &mut Runtime<'_, Keys>) -> Result<Transition<Keys>, RunError> {
        match self {
            Next::Keeper(task) => {
                run.handoff(GUARD_TO_KEEPER, &task, Keeper::contract(&task))?;
                Ok(Transition::To(State::Keeper(task)))
            }
            Next::Guard(task) => {
                run.handoff(KEEPER_TO_GUARD, &task, Guard::contract(&task))?;
                Ok(Transition::To(State::Guard(task)))
            }
            Next::End(task, edge) => {
                run.end(edge, &task, None)?;
                Ok(Transition::End(task))
            }
        }
    }
}

impl Agent<Keys> for Keeper {
    const INDEX: u16 = 0;
    type Input = Task;
    type Next = Next;
    async fn run(task: Task, cx: Context<'_, Keys, Self>) -> Result<Next, Reject> {
        match task {
            Task::OwnTool => {
                cx.call(OpenDoor, ()).await?;
            }
            Task::ForeignTool => {
                // Ignored: a refused call stops the run all the same.
                let _ = cx.call(Launch, ()).await;
            }
            Task::OrphanTool => {
                cx.call(Orphan, ()).await?;
            }
            Task::Spend => {
                cx.charge(Usage::tokens(100, 0))?;
                return Ok(Next::Guard(task));
            }
            Task::GuardOwnTool | Task::GuardForeignTool | Task::ForeignScope | Task::Loop => {
                return Ok(Next::Guard(task));
            }
        }
        Ok(Next::End(task, KEEPER_TO_END))
    }
}

impl Agent<Keys> for Guard {
    const INDEX: u16 = 1;
    type Input = Task;
    type Next = Next;
    /// No contract (so no scope), but for `ForeignScope`: a scope over `Door`.
    fn contract(task: &Task) -> Option<ContractView<'_>> {
        (*task == Task::ForeignScope).then_some(ContractView {
            parts: &[],
            authority: "Door",
            expires: workflow_core::Expiry::Never,
            stop: &NO_STOP,
            open: &NO_OPEN,
            evidence: &NO_EVIDENCE,
            max_bytes: None,
            max_tokens: None,
            unbounded_stop: false,
            uncited_evidence: false,
            open_ended: false,
        })
    }
    async fn run(task: Task, cx: Context<'_, Keys, Self>) -> Result<Next, Reject> {
        match task {
            Task::GuardOwnTool => {
                cx.call(Launch, ()).await?;
            }
            Task::GuardForeignTool => {
                cx.call(OpenDoor, ()).await?;
            }
            Task::Loop => return Ok(Next::Keeper(task)),
            _ => {}
        }
        Ok(Next::End(task, GUARD_TO_END))
    }
}

impl Workflow for Keys {
    type Input = Task;
    type Output = Task;
    type Root = ();
    type Deps = Arc<Doors>;
    type State = State;
    const GRAPH: &'static Graph = &GRAPH;

    fn start(task: Task, run: &mut Runtime<'_, Self>) -> Result<State, RunError> {
        run.handoff(0, &task, None)?;
        Ok(State::Keeper(task))
    }

    async fn turn<'a, 'x>(
        state: State,
        run: &'a mut Runtime<'x, Self>,
    ) -> Result<Transition<Self>, RunError> {
        match state {
            State::Keeper(task) => run.turn::<Keeper>(task).await,
            State::Guard(task) => run.turn::<Guard>(task).await,
        }
    }

    fn agent_of(state: &State) -> u16 {
        match state {
            State::Keeper(_) => 0,
            State::Guard(_) => 1,
        }
    }

    fn schemas(set: &mut SchemaSet) {
        set.add::<Task>();
    }
}

fn keys() -> (Executor<Keys>, Arc<Doors>) {
    let doors = Arc::new(Doors::default());
    (Executor::new((), doors.clone()), doors)
}

/// Asserts that the run stopped on `agent`'s refused call of `tool` (out of
/// scope), and that the refused call is recorded, failed, with that turn.
#[track_caller]
fn assert_refused(aborted: &workflow_core::Aborted, agent: &str, tool: &str) {
    match &aborted.error {
        RunError::ToolFailed { agent: a, error } => {
            assert_eq!((*a, error.tool.as_ref()), (agent, tool));
            assert_eq!(error.kind, ToolErrorKind::OutOfScope, "{error}");
        }
        other => panic!("expected a refused tool call, got {other}"),
    }
    let (_, turn) = aborted
        .transcript
        .turns()
        .last()
        .expect("the turn is recorded");
    assert_eq!(turn.agent, agent);
    assert_eq!(turn.tool_calls.len(), 1, "{:?}", turn.tool_calls);
    assert_eq!(turn.tool_calls[0].tool, tool);
    assert!(
        matches!(
            &turn.tool_calls[0].outcome,
            ToolOutcome::Failed { error } if error.kind == ToolErrorKind::OutOfScope
        ),
        "{:?}",
        turn.tool_calls[0].outcome
    );
}

// ---------------------------------------------------------------------------
// Tool calls under no scope
// ---------------------------------------------------------------------------

#[tokio::test]
async fn the_entry_agent_may_call_a_tool_needing_an_authority_it_owns() {
    let (wf, doors) = keys();
    let done = wf.run(Task::OwnTool).await.expect("completes");
    assert_eq!(done.output, Task::OwnTool);
    assert_eq!(doors.runs(), [1, 0, 0]);
}

#[tokio::test]
async fn the_entry_agent_calling_a_tool_needing_another_agents_authority_is_refused() {
    let (wf, doors) = keys();
    let aborted = wf.run(Task::ForeignTool).await.expect_err("refused");
    assert_eq!(doors.runs(), [0, 0, 0], "`launch` never ran");
    assert_refused(&aborted, "keeper", "launch");
    let RunError::ToolFailed { error, .. } = &aborted.error else {
        unreachable!()
    };
    assert!(
        error
            .message
            .contains("needs authority `Launch`, which agent `keeper` does not own"),
        "{error}"
    );
}

#[tokio::test]
async fn the_entry_agent_calling_a_tool_needing_an_authority_nobody_owns_is_refused() {
    let (wf, doors) = keys();
    let aborted = wf.run(Task::OrphanTool).await.expect_err("refused");
    assert_eq!(doors.runs(), [0, 0, 0], "`orphan` never ran");
    assert_refused(&aborted, "keeper", "orphan");
}

#[tokio::test]
async fn an_agent_whose_input_has_no_contract_may_call_only_what_it_owns() {
    let (wf, doors) = keys();
    let done = wf.run(Task::GuardOwnTool).await.expect("completes");
    assert_eq!(done.output, Task::GuardOwnTool);
    assert_eq!(doors.runs(), [0, 1, 0]);

    let (wf, doors) = keys();
    let aborted = wf.run(Task::GuardForeignTool).await.expect_err("refused");
    assert_eq!(doors.runs(), [0, 0, 0], "`open_door` never ran");
    assert_refused(&aborted, "guard", "open_door");
}

// ---------------------------------------------------------------------------
// Run-wide limits at an escalating receipt
// ---------------------------------------------------------------------------

/// Asserts that the run stopped on the rejection of `from -> to` for
/// `reason` (recorded `rejected`, the last record), and suspended nothing.
#[track_caller]
fn assert_stopped(aborted: &workflow_core::Aborted, from: &str, to: &str, reason: RejectReason) {
    assert!(aborted.suspension().is_none(), "nothing to approve");
    assert!(
        matches!(
            receipts(&aborted.transcript).last(),
            Some(Receipt::Rejected { .. })
        ),
        "recorded as rejected, not escalated"
    );
    assert_rejected(aborted, from, to, reason);
}

#[tokio::test]
async fn a_loop_bound_at_an_escalating_receipt_stops_the_run_and_asks_nobody() {
    let (wf, _) = keys();
    let aborted = wf.run(Task::Loop).await.expect_err("loop bound");
    assert_stopped(
        &aborted,
        "guard",
        "keeper",
        RejectReason::LoopBound { bound: 1 },
    );
    // keeper, guard, keeper, guard: the second `guard -> keeper` is refused.
    assert_eq!(route(&aborted.transcript).len(), 5);
}

#[tokio::test]
async fn a_used_up_budget_at_an_escalating_receipt_stops_the_run_and_asks_nobody() {
    let (wf, _) = keys();
    let wf = wf.with_budget(Budget::default().max_tokens(100));
    let aborted = wf.run(Task::Spend).await.expect_err("budget");
    assert_stopped(
        &aborted,
        "keeper",
        "guard",
        RejectReason::BudgetExhausted {
            budget: "tokens".into(),
            limit: 100,
            spent: 100,
        },
    );
}

#[tokio::test]
async fn a_passed_deadline_at_an_escalating_receipt_stops_the_run_and_asks_nobody() {
    let (wf, doors) = keys();
    let wf = wf.with_deadline(Duration::ZERO);
    let aborted = wf.run(Task::OwnTool).await.expect_err("deadline");
    assert_stopped(
        &aborted,
        "START",
        "keeper",
        RejectReason::DeadlinePassed { after_ms: 0 },
    );
    assert_eq!(doors.runs(), [0, 0, 0], "keeper never ran");
}

#[tokio::test]
async fn an_unowned_scope_at_an_escalating_receipt_stops_the_run_and_asks_nobody() {
    let (wf, _) = keys();
    let aborted = wf.run(Task::ForeignScope).await.expect_err("not owned");
    assert_stopped(
        &aborted,
        "keeper",
        "guard",
        RejectReason::ScopeNotOwned {
            authority: "Door".into(),
        },
    );
    // The workflow input, then the refused handoff: nothing after it.
    assert_eq!(route(&aborted.transcript).len(), 2);
}
