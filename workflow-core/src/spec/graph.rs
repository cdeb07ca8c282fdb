//! The static description of a workflow: agents, edges, tools, bounds.
//!
//! `#[workflow]` writes one [`Graph`] per workflow as a `static`; the executor
//! indexes into it on every transition, and the manifest and the Mermaid
//! diagram are drawn from it.

use std::borrow::Cow;

use crate::spec::Endpoint;

/// The function that names a type's JSON Schema (`JsonSchema::schema_name`).
pub type SchemaName = fn() -> Cow<'static, str>;

/// One end of an edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Node {
    /// Where the workflow input comes from.
    Start,
    /// The agent at this index of [`Graph::agents`].
    Agent(u16),
    /// Where the workflow output goes.
    End,
}

/// A `#[pre(..)]` or `#[post(..)]` condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Condition {
    /// The expression's source text.
    pub expr: &'static str,
    /// The message that says what the condition protects.
    pub message: &'static str,
}

/// An agent as declared.
#[derive(Debug, Clone, Copy)]
pub struct AgentInfo {
    /// The agent's name (its function's name).
    pub name: &'static str,
    /// The Rust type of its input.
    pub input: &'static str,
    /// The name of its input's schema.
    pub input_schema: SchemaName,
    /// The authorities it owns.
    pub owns: &'static [&'static str],
    /// The tools it is granted.
    pub tools: &'static [&'static str],
    /// Its timeout in milliseconds, if declared.
    pub timeout_ms: Option<u64>,
    /// Its pre-conditions.
    pub pre: &'static [Condition],
    /// Its post-conditions.
    pub post: &'static [Condition],
    /// What a rejection at its receipt does.
    pub on_reject: OnReject,
}

/// What a rejection at an agent's receipt does (`#[agent(on_reject = ..)]`).
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(tag = "then", rename_all = "snake_case", deny_unknown_fields)]
pub enum OnReject {
    /// The run stops with the rejection (the default).
    #[default]
    Abort,
    /// The run is suspended for a person's decision (except for the
    /// run-wide limits and an authority the receiver does not own, which
    /// stop the run: no approval lifts them).
    Escalate,
    /// The handoff goes back to its sender, whose turn runs again with the
    /// rejection in its context; at most `max` times per run.
    Sender {
        /// How many times this agent may return a handoff in one run.
        max: u32,
    },
}

/// A handoff edge as declared.
#[derive(Debug, Clone, Copy)]
pub struct EdgeInfo {
    /// The sender.
    pub from: Node,
    /// The receiver.
    pub to: Node,
    /// The Rust type of the payload carried on this edge.
    pub payload: &'static str,
    /// The name of the payload's schema.
    pub payload_schema: SchemaName,
    /// The edge's loop bound (`max = N`), if declared.
    pub bound: Option<u32>,
}

/// A tool as declared.
#[derive(Debug, Clone, Copy)]
pub struct ToolInfo {
    /// The tool's name.
    pub name: &'static str,
    /// The Rust type of its input.
    pub input: &'static str,
    /// The name of its input's schema.
    pub input_schema: SchemaName,
    /// The Rust type of its output.
    pub output: &'static str,
    /// The name of its output's schema.
    pub output_schema: SchemaName,
    /// The authority it needs, if any.
    pub needs: Option<&'static str>,
    /// What it does (its doc comment).
    pub description: &'static str,
    /// What it does to the world.
    pub effect: crate::spec::Effect,
    /// What happens when a call fails.
    pub fallback: crate::spec::Fallback,
    /// The declared version of its description and schemas
    /// (`#[tool(version = N)]`, 1 when not written): a change of the
    /// description or of a schema needs a higher version, or the drift
    /// check ([`Publication::check`](crate::Publication::check)) fails.
    pub version: u32,
    /// Its input's JSON Schema (draft 2020-12).
    pub input_schema_doc: fn() -> schemars::Schema,
    /// Its output's JSON Schema (draft 2020-12).
    pub output_schema_doc: fn() -> schemars::Schema,
}

/// The whole static description of a workflow.
#[derive(Debug, Clone, Copy)]
pub struct Graph {
    /// The workflow's name (its module's name).
    pub name: &'static str,
    /// The agents, in declaration order.
    pub agents: &'static [AgentInfo],
    /// The edges; edge 0 is `START -> entry`.
    pub edges: &'static [EdgeInfo],
    /// The tools.
    pub tools: &'static [ToolInfo],
    /// The workflow's input type.
    pub input: &'static str,
    /// The workflow's output type.
    pub output: &'static str,
    /// The computed upper bound on agent turns in any run.
    pub max_hops: u32,
}

impl Graph {
    /// The name of a node, as written in records.
    pub fn endpoint(&self, node: Node) -> Endpoint {
        match node {
            Node::Start => Endpoint::Start,
            Node::Agent(_) => Endpoint::Agent(Cow::Borrowed(self.node_name(node))),
            Node::End => Endpoint::End,
        }
    }

    /// The name of a node as text (`START`, an agent's name, `END`).
    pub fn node_name(&self, node: Node) -> &'static str {
        match node {
            Node::Start => "START",
            // `?` for an index a hand-written graph got wrong.
            Node::Agent(i) => self.agents.get(i as usize).map_or("?", |a| a.name),
            Node::End => "END",
        }
    }
}

impl Graph {
    /// The index of the first edge from `from` to `to`, in a constant (for
    /// hand-written workflows, which name their edges by index as generated
    /// code does). Used in a `const`, a missing edge is a compile error.
    pub const fn edge_index(&self, from: Node, to: Node) -> u16 {
        let mut i = 0;
        while i < self.edges.len() {
            let e = &self.edges[i];
            if node_eq(e.from, from) && node_eq(e.to, to) {
                return i as u16;
            }
            i += 1;
        }
        panic!("no such edge in the graph")
    }
}

const fn node_eq(a: Node, b: Node) -> bool {
    match (a, b) {
        (Node::Start, Node::Start) | (Node::End, Node::End) => true,
        (Node::Agent(x), Node::Agent(y)) => x == y,
        _ => false,
    }
}
