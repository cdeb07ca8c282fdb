//! A scope exercised by an agent that does not own it, on the hand-written
//! path (a generated workflow does not compile with it): `keeper` owns the
//! `Door` authority and `guard` owns `Launch`; `keeper` hands `guard` a
//! scope over `Door`, and `guard`, granted every tool by its hand-written
//! impls, opens the door under it.

use std::sync::LazyLock;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use workflow_core::{
    Agent, AgentInfo, Context, ContractView, EdgeInfo, Evidence, Executor, Expiry, Granted, Graph,
    Node, OnReject, Reject, Route, RunError, Runtime, SchemaSet, StopWhen, Tool, ToolCallPermit,
    ToolError, Transition, Uncertainty, Workflow,
};

use super::{Effects, InAudit, Observed, Scenario, Trial};

/// The scenario.
pub const SCENARIO: Scenario = Scenario {
    name: "scope_not_owned",
    mast: "1.2 Disobey role specification (an authority exercised by a non-owner)",
    fault: "keeper delegates its own `Door` to guard, which opens the door (clean: guard's `Launch`)",
    unauthorized: "`open_door` called in guard's turn: guard does not own `Door`",
    correct: "clean: guard launches and the run ends; faulty: stopped at guard's receipt",
    mechanism: "`scope_not_owned` at the receipt (hand-written path; a compile error when generated)",
    in_audit: InAudit::LetsThrough,
    run: |t| Box::pin(run(t)),
};

/// The workflow input and every payload: whether keeper delegates the
/// scope it must not (the fault), and a seeded tag carried to the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Task {
    /// keeper delegates `Door` to guard.
    pub foreign: bool,
    /// A seeded tag, carried to the output.
    pub tag: u32,
}

const fn agent(name: &'static str, owns: &'static [&'static str]) -> AgentInfo {
    AgentInfo {
        name,
        input: "Task",
        input_schema: schema_name,
        owns,
        tools: &["open_door", "launch"],
        timeout_ms: None,
        pre: &[],
        post: &[],
        on_reject: OnReject::Abort,
    }
}

fn schema_name() -> std::borrow::Cow<'static, str> {
    <Task as JsonSchema>::schema_name()
}

const fn edge(from: Node, to: Node) -> EdgeInfo {
    EdgeInfo {
        from,
        to,
        payload: "Task",
        payload_schema: schema_name,
        bound: None,
    }
}

const KEEPER: Node = Node::Agent(0);
const GUARD: Node = Node::Agent(1);

static GRAPH: Graph = Graph {
    name: "doors",
    agents: &[agent("keeper", &["Door"]), agent("guard", &["Launch"])],
    edges: &[
        edge(Node::Start, KEEPER),
        edge(KEEPER, GUARD),
        edge(GUARD, Node::End),
    ],
    tools: &[],
    input: "Task",
    output: "Task",
    max_hops: 4,
};

const KEEPER_TO_GUARD: u16 = GRAPH.edge_index(KEEPER, GUARD);
const GUARD_TO_END: u16 = GRAPH.edge_index(GUARD, Node::End);

/// The hand-written workflow.
pub struct Doors;

/// Where a run stands.
pub enum State {
    /// keeper's turn is next.
    Keeper(Task),
    /// guard's turn is next.
    Guard(Task),
}

/// Opens the door (needs `Door`, keeper's).
#[derive(Clone, Copy)]
struct OpenDoor;
/// Launches (needs `Launch`, guard's).
#[derive(Clone, Copy)]
struct Launch;

impl Tool<Doors> for OpenDoor {
    const NAME: &'static str = "open_door";
    const NEEDS: Option<&'static str> = Some("Door");
    type Input = ();
    type Output = u32;
    async fn call(
        self,
        (): (),
        effects: &Effects,
        _: ToolCallPermit<Self>,
    ) -> Result<u32, ToolError> {
        // Only keeper owns `Door`, and only guard has a turn that calls it.
        effects.push("open_door", "the door opened in guard's turn", false);
        Ok(1)
    }
}

impl Tool<Doors> for Launch {
    const NAME: &'static str = "launch";
    const NEEDS: Option<&'static str> = Some("Launch");
    type Input = ();
    type Output = u32;
    async fn call(
        self,
        (): (),
        effects: &Effects,
        _: ToolCallPermit<Self>,
    ) -> Result<u32, ToolError> {
        effects.push("launch", "launched in guard's turn", true);
        Ok(1)
    }
}

struct Keeper;
struct Guard;

// The hand-written mistake: guard is granted keeper's tool too.
impl Granted<OpenDoor> for Guard {}
impl Granted<Launch> for Guard {}

static STOP: LazyLock<StopWhen> = LazyLock::new(|| StopWhen::at_hop(GRAPH.max_hops));
static NO_OPEN: Vec<Uncertainty> = Vec::new();
static NO_EVIDENCE: Vec<Evidence> = Vec::new();

/// Where a turn goes.
pub enum Next {
    /// To guard.
    Guard(Task),
    /// To the end.
    End(Task),
}

impl Route<Doors> for Next {
    fn route(self, run: &mut Runtime<'_, Doors>) -> Result<Transition<Doors>, RunError> {
        match self {
            Next::Guard(task) => {
                run.handoff(KEEPER_TO_GUARD, &task, Guard::contract(&task))?;
                Ok(Transition::To(State::Guard(task)))
            }
            Next::End(task) => {
                run.end(GUARD_TO_END, &task, None)?;
                Ok(Transition::End(task))
            }
        }
    }
}

impl Agent<Doors> for Keeper {
    const INDEX: u16 = 0;
    type Input = Task;
    type Next = Next;
    async fn run(task: Task, _cx: Context<'_, Doors, Self>) -> Result<Next, Reject> {
        Ok(Next::Guard(task))
    }
}

impl Agent<Doors> for Guard {
    const INDEX: u16 = 1;
    type Input = Task;
    type Next = Next;
    /// A scope over `Door` (the fault) or over `Launch`, until the cap.
    fn contract(task: &Task) -> Option<ContractView<'_>> {
        Some(ContractView {
            parts: &[],
            authority: if task.foreign { "Door" } else { "Launch" },
            expires: Expiry::AtHop(GRAPH.max_hops),
            stop: &*STOP,
            open: &NO_OPEN,
            evidence: &NO_EVIDENCE,
            max_bytes: None,
            max_tokens: None,
            unbounded_stop: false,
            uncited_evidence: false,
            open_ended: false,
        })
    }
    async fn run(task: Task, cx: Context<'_, Doors, Self>) -> Result<Next, Reject> {
        if task.foreign {
            cx.call(OpenDoor, ()).await?;
        } else {
            cx.call(Launch, ()).await?;
        }
        Ok(Next::End(task))
    }
}

impl Workflow for Doors {
    type Input = Task;
    type Output = Task;
    type Root = ();
    type Deps = Effects;
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

async fn run(trial: Trial) -> Observed {
    let mut rng = trial.rng();
    let task = Task {
        foreign: trial.fault,
        tag: rng.between(0, 1_000_000) as u32,
    };
    let wf = Executor::<Doors>::new((), Effects::default()).with_mode(trial.mode);
    let result = wf.run(task).await;
    Observed::of(&result, wf.deps(), |out: &Task| {
        *out == task && !trial.fault
    })
}
