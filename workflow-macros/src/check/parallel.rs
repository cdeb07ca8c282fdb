//! Rules for fan-outs (`to = [parallel(a, b)]`) and their joins
//! (`join = [a: T, b: T]`), and the graph the other rules analyse: each
//! fan-out drawn as the chain of turns it takes (`from -> a -> b -> join`),
//! so that reachability, ends, loops and `MAX_HOPS` count every branch.

use syn::Ident;
use syn::ext::IdentExt;

use crate::ctxt::Ctxt;
use crate::graph::{Edge, Graph, Target};
use crate::model::value::Effect;
use crate::model::workflow::Workflow;

/// What an edge of the resolved graph is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EdgeKind {
    /// A handoff.
    Plain,
    /// The fan-out agent's transfer to branch `branch` of fork `fork`.
    Start { fork: usize, branch: usize },
    /// Branch `branch`'s outcome, from its agent to the join.
    Outcome { fork: usize, branch: usize },
    /// The join's transfer, from the fan-out agent to the join agent.
    Join { fork: usize },
}

/// A fan-out as resolved.
pub struct ForkModel {
    /// The fan-out agent.
    pub from: usize,
    /// The branches' agents, in the order `parallel(..)` lists them.
    pub branches: Vec<usize>,
    /// The `parallel` keyword (where errors about the fan-out point).
    pub token: Ident,
    /// The join agent, when one names exactly these branches.
    pub join: Option<usize>,
    /// Each branch's edges: (start, outcome), by index into the edges.
    pub edges: Vec<(usize, Option<usize>)>,
    /// The join's edge.
    pub join_edge: Option<usize>,
    /// Whether the fan-out passed its rules (a join names exactly its
    /// branches, each branch hands to the join only): its turn is
    /// generated only then, so that a reported mistake causes no other.
    pub clean: bool,
}

impl ForkModel {
    /// The type each branch hands to the join, as the join declares it.
    pub fn output<'w>(&self, wf: &'w Workflow, branch: usize) -> Option<&'w syn::Type> {
        let join = &wf.agents[self.join?];
        let name = wf.agents[self.branches[branch]].name.unraw().to_string();
        join.args
            .join
            .iter()
            .find(|j| j.name.unraw() == name)
            .map(|j| &j.ty)
    }
}

/// Checks every fan-out and join, marks the edges of each, adds each join's
/// edge, and returns the graph to analyse (with the token of each of its
/// edges).
pub fn resolve(
    cx: &Ctxt,
    wf: &Workflow,
    graph: &mut Graph,
    tokens: &mut Vec<Ident>,
    mut kinds: Vec<EdgeKind>,
    forks: &mut [ForkModel],
) -> (Graph, Vec<Ident>, Vec<EdgeKind>) {
    let name = |a: usize| wf.agents[a].name.unraw().to_string();
    let mut used_joins = vec![false; wf.agents.len()];
    for (f, fork) in forks.iter_mut().enumerate() {
        let mut want: Vec<String> = fork.branches.iter().map(|&b| name(b)).collect();
        want.sort();
        let join = wf.agents.iter().position(|a| {
            let mut names: Vec<String> = a
                .args
                .join
                .iter()
                .map(|j| j.name.unraw().to_string())
                .collect();
            names.sort();
            !names.is_empty() && names == want
        });
        let Some(join) = join else {
            cx.error_spanned_by(
                &fork.token,
                format!(
                    "the fan-out of `{}` has no join: no agent declares `join = [..]` naming exactly its branches ({}); declare `#[agent(join = [{}])]` on the agent that receives their outcomes",
                    name(fork.from),
                    want.join(", "),
                    want.iter().map(|b| format!("{b}: Output")).collect::<Vec<_>>().join(", ")
                ),
            );
            continue;
        };
        used_joins[join] = true;
        fork.join = Some(join);
        fork.clean = true;
        // Each branch hands its outcome to the join, and nowhere else.
        for (k, &b) in fork.branches.iter().enumerate() {
            let agent = &wf.agents[b];
            let only_join = agent.args.to.len() == 1
                && agent.args.to[0].branches.is_none()
                && agent.args.to[0].name.unraw() == name(join);
            if !only_join {
                fork.clean = false;
                let at = agent.args.to_key.as_ref().unwrap_or(&agent.name);
                cx.error_spanned_by(
                    at,
                    format!(
                        "agent `{}` is a branch of the fan-out of `{}`: it hands its outcome to the join `{}` only; write `to = [{}]`",
                        name(b),
                        name(fork.from),
                        name(join),
                        name(join)
                    ),
                );
            }
            let outcome = graph
                .edges
                .iter()
                .position(|e| e.from == b && e.to == Target::Agent(join));
            if let Some(i) = outcome {
                kinds[i] = EdgeKind::Outcome { fork: f, branch: k };
            }
            fork.edges[k].1 = outcome;
            fork.clean &= outcome.is_some();
        }
        graph.edges.push(Edge {
            from: fork.from,
            to: Target::Agent(join),
            bound: None,
        });
        tokens.push(fork.token.clone());
        kinds.push(EdgeKind::Join { fork: f });
        fork.join_edge = Some(graph.edges.len() - 1);
        check_write_tools(cx, wf, fork);
    }
    for (a, agent) in wf.agents.iter().enumerate() {
        if let Some(key) = &agent.args.join_key
            && !used_joins[a]
        {
            cx.error_spanned_by(
                key,
                format!(
                    "agent `{}` joins branches that no `parallel(..)` starts together; name exactly the branches of one fan-out",
                    name(a)
                ),
            );
        }
    }
    // A branch receives from its fan-out only.
    for (i, e) in graph.edges.iter().enumerate() {
        let Target::Agent(to) = e.to else { continue };
        let is_branch = forks.iter().any(|f| f.branches.contains(&to));
        if is_branch && kinds[i] == EdgeKind::Plain {
            cx.error_spanned_by(
                &tokens[i],
                format!(
                    "agent `{}` is a branch of a fan-out: it receives from its fan-out only; hand off to the fan-out's agent instead",
                    name(to)
                ),
            );
        }
    }
    let (analysis, analysis_tokens) = chains(graph, tokens, &kinds, forks);
    (analysis, analysis_tokens, kinds)
}

/// Two branches of one fan-out run at the same time: a write (or
/// destructive) tool granted to both could apply the same change twice.
fn check_write_tools(cx: &Ctxt, wf: &Workflow, fork: &ForkModel) {
    let writes = |tool: &Ident| {
        wf.tools.iter().any(|t| {
            t.name.unraw() == tool.unraw()
                && matches!(
                    t.args.effect.as_ref().map(|e| &e.value),
                    Some(Effect::Write | Effect::Destructive)
                )
        })
    };
    let mut held: Vec<(String, usize)> = Vec::new();
    for &b in &fork.branches {
        for tool in &wf.agents[b].args.tools {
            if !writes(tool) {
                continue;
            }
            let key = tool.unraw().to_string();
            match held.iter().find(|(t, _)| *t == key) {
                Some((_, other)) if *other != b => cx.error_spanned_by(
                    tool,
                    format!(
                        "branches `{}` and `{}` of the fan-out of `{}` run at the same time and both hold write tool `{key}`: two turns could apply the same change; grant it to one of them, or move the write after the join",
                        wf.agents[*other].name.unraw(),
                        wf.agents[b].name.unraw(),
                        wf.agents[fork.from].name.unraw(),
                    ),
                ),
                Some(_) => {}
                None => held.push((key, b)),
            }
        }
    }
}

/// The graph the rules analyse: each fan-out's edges replaced by the chain
/// of turns it takes (`from -> a -> b -> .. -> join`), so that every
/// branch's turn counts.
fn chains(
    graph: &Graph,
    tokens: &[Ident],
    kinds: &[EdgeKind],
    forks: &[ForkModel],
) -> (Graph, Vec<Ident>) {
    let mut edges = Vec::new();
    let mut out_tokens = Vec::new();
    for (i, e) in graph.edges.iter().enumerate() {
        if kinds.get(i).is_none_or(|k| *k == EdgeKind::Plain) {
            edges.push(*e);
            out_tokens.push(tokens[i].clone());
        }
    }
    for fork in forks {
        let mut at = fork.from;
        for &b in &fork.branches {
            edges.push(Edge {
                from: at,
                to: Target::Agent(b),
                bound: None,
            });
            out_tokens.push(fork.token.clone());
            at = b;
        }
        if let Some(join) = fork.join {
            edges.push(Edge {
                from: at,
                to: Target::Agent(join),
                bound: None,
            });
            out_tokens.push(fork.token.clone());
        }
    }
    let analysis = Graph {
        agents: graph.agents,
        entry: graph.entry,
        edges,
    };
    (analysis, out_tokens)
}
