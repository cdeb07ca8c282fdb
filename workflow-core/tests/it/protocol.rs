//! A hand-written workflow that drives the `Runtime` out of order gets a
//! `RunError::Protocol`, never a panic; and its turns (`Runtime::turn`)
//! are cut at the agent's timeout as generated ones are.

use std::borrow::Cow;
use std::future::Future;

use schemars::JsonSchema;
use workflow_core::{
    Agent, AgentInfo, Context, EdgeInfo, Graph, Node, Reject, Route, RunError, Runtime, SchemaSet,
    Transition, Workflow,
};

use crate::fixtures::rejection;

fn schema_name() -> Cow<'static, str> {
    <u32 as JsonSchema>::schema_name()
}

/// How the broken workflow misbehaves.
#[derive(Clone, Copy)]
enum Mistake {
    /// `start` records no transfer before the first turn.
    NoTransfer,
    /// `route` names an edge the graph does not have.
    UnknownEdge,
    /// `route` ends the run over an edge that leads to an agent.
    EndOverAgentEdge,
    /// The agent's input delegates an authority it does not own (generated
    /// workflows cannot: a compile error).
    ForeignScope,
    /// Not a mistake: the agent's body sleeps past its timeout, which the
    /// hand-written turn (`Runtime::turn`) enforces as a generated one does.
    TooSlow,
}

static NO_STOP: workflow_core::StopWhen = workflow_core::StopWhen::NONE;
static NO_OPEN: Vec<workflow_core::Uncertainty> = Vec::new();
static NO_EVIDENCE: Vec<workflow_core::Evidence> = Vec::new();

struct Broken;

static GRAPH: Graph = Graph {
    name: "broken",
    agents: &[AgentInfo {
        name: "only",
        input: "u32",
        input_schema: schema_name,
        owns: &[],
        tools: &[],
        timeout_ms: Some(100),
        pre: &[],
        post: &[],
        on_reject: workflow_core::OnReject::Abort,
    }],
    edges: &[
        EdgeInfo {
            from: Node::Start,
            to: Node::Agent(0),
            payload: "u32",
            payload_schema: schema_name,
            bound: None,
        },
        EdgeInfo {
            from: Node::Agent(0),
            to: Node::End,
            payload: "u32",
            payload_schema: schema_name,
            bound: None,
        },
    ],
    tools: &[],
    input: "u32",
    output: "u32",
    max_hops: 1,
};

struct Only;

struct Next(u32, Mistake);

impl Route<Broken> for Next {
    fn route(self, run: &mut Runtime<'_, Broken>) -> Result<Transition<Broken>, RunError> {
        match self.1 {
            Mistake::UnknownEdge => run.end(7, &self.0, None)?,
            Mistake::EndOverAgentEdge => run.end(0, &self.0, None)?,
            Mistake::NoTransfer | Mistake::ForeignScope | Mistake::TooSlow => {
                run.end(1, &self.0, None)?
            }
        }
        Ok(Transition::End(self.0))
    }
}

impl Agent<Broken> for Only {
    const INDEX: u16 = 0;
    const TIMEOUT: Option<std::time::Duration> = Some(std::time::Duration::from_millis(100));
    type Input = (u32, Mistake);
    type Next = Next;
    fn contract(input: &(u32, Mistake)) -> Option<workflow_core::ContractView<'_>> {
        matches!(input.1, Mistake::ForeignScope).then_some(workflow_core::ContractView {
            parts: &[],
            authority: "Launch",
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
    async fn run(input: (u32, Mistake), _cx: Context<'_, Broken, Self>) -> Result<Next, Reject> {
        if let Mistake::TooSlow = input.1 {
            tokio::time::sleep(std::time::Duration::from_secs(10)).await;
        }
        Ok(Next(input.0, input.1))
    }
}

impl Workflow for Broken {
    type Input = (u32, Mistake);
    type Output = u32;
    type Root = ();
    type Deps = ();
    type State = (u32, Mistake);
    const GRAPH: &'static Graph = &GRAPH;

    fn start(input: Self::Input, run: &mut Runtime<'_, Self>) -> Result<Self::State, RunError> {
        if !matches!(input.1, Mistake::NoTransfer) {
            run.handoff(0, &input.0, None)?;
        }
        Ok(input)
    }

    fn turn<'a, 'x>(
        state: Self::State,
        run: &'a mut Runtime<'x, Self>,
    ) -> impl Future<Output = Result<Transition<Self>, RunError>> + Send + 'a {
        run.turn::<Only>(state)
    }

    fn agent_of(_state: &Self::State) -> u16 {
        0
    }

    fn schemas(set: &mut SchemaSet) {
        set.add::<u32>();
    }
}

// `Mistake` travels in the input only to pick the mistake; it is not a payload.
impl serde::Serialize for Mistake {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_unit()
    }
}
impl<'de> serde::Deserialize<'de> for Mistake {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        <()>::deserialize(d).map(|()| Mistake::NoTransfer)
    }
}
impl JsonSchema for Mistake {
    fn schema_name() -> Cow<'static, str> {
        "Mistake".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "null" })
    }
}

async fn run(mistake: Mistake) -> RunError {
    let wf = workflow_core::Executor::<Broken>::new((), ());
    match wf.run((1, mistake)).await {
        Ok(done) => panic!("the broken workflow completed: {:?}", done.output),
        Err(aborted) => aborted.error,
    }
}

#[tokio::test]
async fn a_turn_without_a_recorded_transfer_is_a_protocol_error() {
    let error = run(Mistake::NoTransfer).await;
    assert!(
        matches!(&error, RunError::Protocol(m) if m.contains("agent `only` was given a turn without a transfer")),
        "{error:?}"
    );
}

#[tokio::test]
async fn an_unknown_edge_is_a_protocol_error() {
    let error = run(Mistake::UnknownEdge).await;
    assert!(
        matches!(&error, RunError::Protocol(m) if m.contains("edge 7 is not an edge of workflow `broken` to END")),
        "{error:?}"
    );
}

#[tokio::test]
async fn ending_over_an_edge_to_an_agent_is_a_protocol_error() {
    let error = run(Mistake::EndOverAgentEdge).await;
    assert!(
        matches!(&error, RunError::Protocol(m) if m.contains("edge 0 is not an edge of workflow `broken` to END")),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_scope_over_an_authority_the_receiver_does_not_own_is_rejected() {
    let error = run(Mistake::ForeignScope).await;
    let not_owned = workflow_core::RejectReason::ScopeNotOwned {
        authority: "Launch".into(),
    };
    assert_eq!(rejection(&error), ("START", "only", &not_owned));
}

#[tokio::test]
async fn a_hand_written_turn_past_its_timeout_is_cut_and_recorded() {
    let wf = workflow_core::Executor::<Broken>::new((), ());
    let started = std::time::Instant::now();
    let aborted = wf
        .run((1, Mistake::TooSlow))
        .await
        .expect_err("the body sleeps past its 100 ms");
    assert_eq!(
        aborted.error,
        RunError::Timeout {
            agent: "only",
            after_ms: 100,
        }
    );
    // Cut at the timeout (the body's future dropped), not after its sleep.
    let waited = started.elapsed();
    assert!(
        waited >= std::time::Duration::from_millis(100)
            && waited < std::time::Duration::from_secs(5),
        "{waited:?}"
    );
    // The turn's input recorded again, failed, after its accepted receipt.
    let last = aborted.transcript.len() - 1;
    assert_eq!(last, 1, "the input's transfer, then the failed turn");
    assert_eq!(
        aborted.transcript.receipt(0),
        Some(workflow_core::Receipt::Accepted)
    );
    assert!(
        matches!(
            aborted.transcript.receipt(last),
            Some(workflow_core::Receipt::TurnFailed { error }) if error.contains("timed out after 100 ms")
        ),
        "{:?}",
        aborted.transcript.receipt(last)
    );
}
