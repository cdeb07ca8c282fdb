//! The manifest of a workflow (its published shape) and its Mermaid diagram.

use std::fmt::Write as _;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::export::file_name;
use crate::spec::published_name;
use crate::spec::{ForkInfo, Graph, JoinPolicy, Node};

/// A published description of a workflow's graph.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// The workflow's name.
    pub workflow: String,
    /// The entry agent.
    pub entry: String,
    /// The schema file of the workflow input.
    pub input_schema: String,
    /// The schema file of the workflow output.
    pub output_schema: String,
    /// The computed upper bound on agent turns in any run.
    pub max_hops: u32,
    /// The agents.
    pub agents: Vec<ManifestAgent>,
    /// The authorities and their one owner each.
    pub authorities: Vec<ManifestAuthority>,
    /// The tools.
    pub tools: Vec<ManifestTool>,
    /// The handoff edges, `START` and `END` included (a fan-out's edges
    /// too: to each branch, from each branch to the join, and the join's
    /// transfer from the fan-out agent to the join agent).
    pub edges: Vec<ManifestEdge>,
    /// The fan-outs and their joins (absent when there are none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub forks: Vec<ManifestFork>,
}

/// A fan-out and its join in the manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ManifestFork {
    /// The agent whose turn starts the branches.
    pub from: String,
    /// `parallel` (one branch per listed agent) or `map` (one branch of
    /// one agent per item of a list).
    pub kind: ManifestForkKind,
    /// The branches' agents, in order (a map's one receiver).
    pub branches: Vec<String>,
    /// A map's bound: the most items one turn may hand on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u32>,
    /// The agent that receives every branch's outcome.
    pub join: String,
    /// The schema file of the join's input (every branch's outcome).
    pub join_input_schema: String,
    /// When the join goes on.
    pub policy: JoinPolicy,
}

/// What kind of fan-out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ManifestForkKind {
    /// `parallel(a, b, ..)`: one branch per listed agent.
    Parallel,
    /// `map(worker, max = N)`: one branch of `worker` per item.
    Map,
}

/// An agent in the manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ManifestAgent {
    /// Its name.
    pub name: String,
    /// The schema file of its input.
    pub input_schema: String,
    /// The authorities it owns.
    pub owns: Vec<String>,
    /// The tools it is granted.
    pub tools: Vec<String>,
    /// Its timeout, if declared.
    pub timeout_ms: Option<u64>,
    /// Its pre-conditions, as `expr: message`.
    pub pre: Vec<String>,
    /// Its post-conditions, as `expr: message`.
    pub post: Vec<String>,
    /// What a rejection at its receipt does.
    pub on_reject: crate::spec::OnReject,
}

/// An authority and its owner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ManifestAuthority {
    /// The authority.
    pub name: String,
    /// The one agent that owns it.
    pub owner: String,
}

/// A tool in the manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ManifestTool {
    /// Its name.
    pub name: String,
    /// The schema file of its input.
    pub input_schema: String,
    /// The schema file of its output.
    pub output_schema: String,
    /// The authority it needs, if any.
    pub needs: Option<String>,
    /// What it does (its doc comment).
    pub description: String,
    /// What it does to the world.
    pub effect: crate::spec::Effect,
    /// What happens when a call fails.
    pub fallback: crate::spec::Fallback,
    /// The declared version of its description and schemas
    /// (`#[tool(version = N)]`).
    pub version: u32,
    /// The SHA-256 of its description, hex-encoded.
    pub description_digest: String,
    /// The SHA-256 of its input's JSON Schema (as JSON text), hex-encoded.
    pub input_schema_digest: String,
    /// The SHA-256 of its output's JSON Schema (as JSON text), hex-encoded.
    pub output_schema_digest: String,
}

/// An edge in the manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ManifestEdge {
    /// The sender (`START` for the workflow input).
    pub from: String,
    /// The receiver (`END` for the workflow output).
    pub to: String,
    /// The schema file of the payload.
    pub payload_schema: String,
    /// The loop bound, if declared.
    pub bound: Option<u32>,
}

impl Manifest {
    /// The manifest of workflow `W`, its fan-outs included.
    pub fn of_workflow<W: crate::spec::Workflow>() -> Self {
        Self::with_forks(W::GRAPH, W::FORKS)
    }

    /// The manifest of `graph` with its fan-outs `forks`.
    pub fn with_forks(graph: &Graph, forks: &[ForkInfo]) -> Self {
        let mut manifest = Self::of(graph);
        let name = |n: u16| graph.node_name(Node::Agent(n)).to_owned();
        manifest.forks = forks
            .iter()
            .map(|f| {
                let join = graph.edges.get(f.fork.join as usize);
                ManifestFork {
                    from: name(f.fork.from),
                    kind: if f.map.is_some() {
                        ManifestForkKind::Map
                    } else {
                        ManifestForkKind::Parallel
                    },
                    branches: f
                        .fork
                        .branches
                        .iter()
                        .filter_map(|b| graph.edges.get(b.start as usize))
                        .map(|e| graph.node_name(e.to).to_owned())
                        .collect(),
                    max_items: f.map,
                    join: join.map_or_else(|| "?".to_owned(), |e| graph.node_name(e.to).to_owned()),
                    join_input_schema: join
                        .map(|e| file_name(&published_name(graph.name, &(e.payload_schema)())))
                        .unwrap_or_default(),
                    policy: f.policy,
                }
            })
            .collect();
        manifest
    }

    /// The manifest of `graph` (without fan-outs: see
    /// [`with_forks`](Self::with_forks)).
    pub fn of(graph: &Graph) -> Self {
        let conditions = |cs: &[crate::spec::Condition]| {
            cs.iter()
                .map(|c| format!("{}: {}", c.expr, c.message))
                .collect()
        };
        // Edge 0 is `START -> entry`; a hand-written graph may lack it.
        let entry_node = graph.edges.first().map_or(Node::End, |e| e.to);
        let entry = graph.node_name(entry_node).to_owned();
        Manifest {
            workflow: graph.name.to_owned(),
            entry,
            input_schema: graph
                .edges
                .first()
                .map(|e| file_name(&published_name(graph.name, &(e.payload_schema)())))
                .unwrap_or_default(),
            output_schema: graph
                .edges
                .iter()
                .find(|e| e.to == Node::End)
                .map(|e| file_name(&published_name(graph.name, &(e.payload_schema)())))
                .unwrap_or_default(),
            max_hops: graph.max_hops,
            agents: graph
                .agents
                .iter()
                .map(|a| ManifestAgent {
                    name: a.name.to_owned(),
                    input_schema: file_name(&published_name(graph.name, &(a.input_schema)())),
                    owns: a.owns.iter().map(|s| (*s).to_owned()).collect(),
                    tools: a.tools.iter().map(|s| (*s).to_owned()).collect(),
                    timeout_ms: a.timeout_ms,
                    pre: conditions(a.pre),
                    post: conditions(a.post),
                    on_reject: a.on_reject,
                })
                .collect(),
            authorities: graph
                .agents
                .iter()
                .flat_map(|a| {
                    a.owns.iter().map(|o| ManifestAuthority {
                        name: (*o).to_owned(),
                        owner: a.name.to_owned(),
                    })
                })
                .collect(),
            tools: graph
                .tools
                .iter()
                .map(|t| {
                    let digests = crate::export::ToolDigests::of(t);
                    ManifestTool {
                        name: t.name.to_owned(),
                        input_schema: file_name(&published_name(graph.name, &(t.input_schema)())),
                        output_schema: file_name(&published_name(graph.name, &(t.output_schema)())),
                        needs: t.needs.map(str::to_owned),
                        description: t.description.to_owned(),
                        effect: t.effect,
                        fallback: t.fallback,
                        version: t.version,
                        description_digest: digests.description,
                        input_schema_digest: digests.input_schema,
                        output_schema_digest: digests.output_schema,
                    }
                })
                .collect(),
            edges: graph
                .edges
                .iter()
                .map(|e| ManifestEdge {
                    from: graph.node_name(e.from).to_owned(),
                    to: graph.node_name(e.to).to_owned(),
                    payload_schema: file_name(&published_name(graph.name, &(e.payload_schema)())),
                    bound: e.bound,
                })
                .collect(),
            forks: Vec::new(),
        }
    }
}

/// A Mermaid flowchart of `graph`: one node per agent, one arrow per edge,
/// labelled with the payload type and the loop bound. Fan-outs are each drawn through a fork node (`fork_N`,
/// labelled `parallel` or `map max N`) from which an arrow goes to each
/// branch, and a join node (`join_N`, labelled with its policy) which each
/// branch's arrow reaches and from which the join's transfer goes to the
/// join agent.
pub(crate) fn mermaid_with_forks(graph: &Graph, forks: &[ForkInfo]) -> String {
    // Node ids are prefixed: Mermaid reserves words such as `end`.
    let id = |n: Node| match n {
        Node::Start => "start__".to_owned(),
        Node::End => "end__".to_owned(),
        Node::Agent(_) => format!("agent_{}", graph.node_name(n)),
    };
    let mut out = String::from("flowchart TD\n");
    out.push_str("    start__([START])\n");
    for (i, a) in graph.agents.iter().enumerate() {
        let _ = writeln!(out, "    {}[{}]", id(Node::Agent(i as u16)), a.name);
    }
    out.push_str("    end__([END])\n");
    // Where each edge of a fan-out goes in the drawing.
    let mut from_of: Vec<Option<String>> = vec![None; graph.edges.len()];
    let mut to_of: Vec<Option<String>> = vec![None; graph.edges.len()];
    for (f, fork) in forks.iter().enumerate() {
        let (fork_id, join_id) = (format!("fork_{f}"), format!("join_{f}"));
        let kind = match fork.map {
            Some(max) => format!("map max {max}"),
            None => "parallel".to_owned(),
        };
        let policy = match fork.policy {
            JoinPolicy::All => "join all".to_owned(),
            JoinPolicy::Quorum(n) => format!("join quorum {n}"),
        };
        let _ = writeln!(out, "    {fork_id}{{{{\"{kind}\"}}}}");
        let _ = writeln!(out, "    {join_id}{{{{\"{policy}\"}}}}");
        let _ = writeln!(out, "    {} --> {fork_id}", id(Node::Agent(fork.fork.from)));
        for b in fork.fork.branches {
            if let Some(slot) = from_of.get_mut(b.start as usize) {
                *slot = Some(fork_id.clone());
            }
            if let Some(slot) = to_of.get_mut(b.outcome as usize) {
                *slot = Some(join_id.clone());
            }
        }
        if let Some(slot) = from_of.get_mut(fork.fork.join as usize) {
            *slot = Some(join_id.clone());
        }
    }
    for (i, e) in graph.edges.iter().enumerate() {
        let label = match e.bound {
            Some(n) => format!("{} max {n}", e.payload),
            None => e.payload.to_owned(),
        };
        let _ = writeln!(
            out,
            "    {} -->|\"{}\"| {}",
            from_of[i].clone().unwrap_or_else(|| id(e.from)),
            mermaid_text(&label),
            to_of[i].clone().unwrap_or_else(|| id(e.to))
        );
    }
    out
}

/// `text` as the inside of a quoted Mermaid label: Mermaid reads `<...>`
/// as HTML (`Vec<Finding>` would render as `Vec`) and `#...;` as an
/// entity, so `#`, `<`, `>` and `"` are written as entity codes.
pub(crate) fn mermaid_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '#' => out.push_str("#35;"),
            '<' => out.push_str("#lt;"),
            '>' => out.push_str("#gt;"),
            '"' => out.push_str("#quot;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::mermaid_text;

    #[test]
    fn generic_payload_types_are_escaped_for_mermaid() {
        assert_eq!(mermaid_text("Vec<Finding>"), "Vec#lt;Finding#gt;");
        assert_eq!(
            mermaid_text("Result<Vec<A>,B> max 3"),
            "Result#lt;Vec#lt;A#gt;,B#gt; max 3"
        );
        assert_eq!(mermaid_text("a\"b#c"), "a#quot;b#35;c");
        assert_eq!(mermaid_text("Goal"), "Goal");
    }
}
