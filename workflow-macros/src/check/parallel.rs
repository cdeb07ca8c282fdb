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
    /// The `parallel` (or `map`) keyword (where errors about the fan-out
    /// point).
    pub token: Ident,
    /// `map(worker, max = N)`: the bound on the items (one branch of
    /// `worker` per item); `None` for `parallel(..)`. A bad bound (reported)
    /// is taken as 1.
    pub map: Option<u32>,
    /// The join's `quorum = N`, when it declares one (checked).
    pub quorum: Option<u32>,
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

/// The most items one `map(..)` may take: each possible item is a turn the
/// rules count (`MAX_HOPS`), drawn as a node of the graph they analyse.
pub const MAP_MAX: u64 = 4096;

/// The bound of `map(worker, max = N)`, checked: written, at least 1, at
/// most [`MAP_MAX`]. A bad one is reported and taken as 1.
pub fn map_bound(cx: &Ctxt, token: &Ident, map: &crate::parse::MapArg) -> u32 {
    let agent = map.agent.unraw();
    let Some(max) = &map.max else {
        cx.error_spanned_by(
            token,
            format!(
                "a map needs a bound: write `map({agent}, max = N)`, the most items one turn may hand to `{agent}` (each counts in `MAX_HOPS`)"
            ),
        );
        return 1;
    };
    match max.get() {
        Some(n) if (1..=MAP_MAX).contains(&n) => n as u32,
        Some(0) => {
            cx.error_spanned_by(
                &max.lit,
                format!(
                    "a map's bound is at least 1: `map({agent}, max = 0)` could never start `{agent}`; write the most items one turn may hand to it"
                ),
            );
            1
        }
        _ => {
            cx.error_spanned_by(
                &max.lit,
                format!(
                    "a map's bound is at most {MAP_MAX}: each possible item is a turn counted in `MAX_HOPS`; split the list over several rounds"
                ),
            );
            1
        }
    }
}

/// The element of `[T]`, the type a join declares for a mapped branch.
pub fn slice_elem(ty: &syn::Type) -> Option<&syn::Type> {
    match ty {
        syn::Type::Slice(s) => Some(&s.elem),
        syn::Type::Group(g) => slice_elem(&g.elem),
        syn::Type::Paren(p) => slice_elem(&p.elem),
        _ => None,
    }
}

impl ForkModel {
    /// The type each branch hands to the join, as the join declares it (for
    /// a map, `T` of its `[T]`).
    pub fn output<'w>(&self, wf: &'w Workflow, branch: usize) -> Option<&'w syn::Type> {
        let join = &wf.agents[self.join?];
        let name = wf.agents[self.branches[branch]].name.unraw().to_string();
        join.args
            .join
            .iter()
            .find(|j| j.name.unraw() == name)
            .map(|j| slice_elem(&j.ty).unwrap_or(&j.ty))
    }
}

/// Checks every fan-out and join, marks the edges of each, adds each join's
/// edge, and returns the graph to analyse (with the token of each of its
/// edges), and the graph whose longest walk is `MAX_HOPS` (each map's
/// receiver drawn once per possible item).
pub fn resolve(
    cx: &Ctxt,
    wf: &Workflow,
    graph: &mut Graph,
    tokens: &mut Vec<Ident>,
    mut kinds: Vec<EdgeKind>,
    forks: &mut [ForkModel],
) -> (Graph, Vec<Ident>, Vec<EdgeKind>, Graph) {
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
        fork.clean = check_join_shape(cx, wf, fork, join);
        fork.quorum = check_quorum(cx, wf, fork, join);
        // Each branch hands its outcome to the join, and nowhere else.
        for (k, &b) in fork.branches.iter().enumerate() {
            let agent = &wf.agents[b];
            let only_join = agent.args.to.len() == 1
                && agent.args.to[0].branches.is_none()
                && agent.args.to[0].map.is_none()
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
        if let (Some(key), None) = (&agent.args.quorum_key, &agent.args.join_key) {
            cx.error_spanned_by(
                key,
                format!(
                    "`quorum` is a join's policy, and agent `{}` joins nothing; declare it beside `join = [..]` on the agent that receives the branches' outcomes",
                    name(a)
                ),
            );
        }
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
    let (analysis, analysis_tokens) = chains(graph, tokens, &kinds, forks, false);
    let (counting, _) = chains(graph, tokens, &kinds, forks, true);
    (analysis, analysis_tokens, kinds, counting)
}

/// A map's join receives a list (`worker: [T]`), a `parallel(..)`'s join
/// one outcome per branch (`a: T`). Whether the join's entries say so.
fn check_join_shape(cx: &Ctxt, wf: &Workflow, fork: &ForkModel, join: usize) -> bool {
    let mut clean = true;
    let join_name = wf.agents[join].name.unraw().to_string();
    let from = wf.agents[fork.from].name.unraw().to_string();
    for j in &wf.agents[join].args.join {
        let listed = slice_elem(&j.ty).is_some();
        let branch = j.name.unraw();
        if fork.map.is_some() && !listed {
            clean = false;
            cx.error_spanned_by(
                &j.ty,
                format!(
                    "`{branch}` is mapped by `{from}` (`map({branch}, ..)`): the join `{join_name}` receives one outcome per item, in the order of the list; declare `{branch}: [T]`"
                ),
            );
        } else if fork.map.is_none() && listed {
            clean = false;
            cx.error_spanned_by(
                &j.ty,
                format!(
                    "`{branch}` is one branch of `{from}`'s `parallel(..)`: the join `{join_name}` receives its one outcome; declare `{branch}: T`, not a list (a list of outcomes comes from `map({branch}, max = N)`)"
                ),
            );
        }
    }
    clean
}

/// The join's `quorum = N`: at least 1, and no more than the branches its
/// fan-out can start (for a map, its bound).
fn check_quorum(cx: &Ctxt, wf: &Workflow, fork: &ForkModel, join: usize) -> Option<u32> {
    let q = wf.agents[join].args.quorum.as_ref()?;
    let most = fork.map.map_or(fork.branches.len() as u64, u64::from);
    let join_name = wf.agents[join].name.unraw();
    match q.get() {
        Some(n) if n >= 1 && n <= most => Some(n as u32),
        Some(0) => {
            cx.error_spanned_by(
                &q.lit,
                format!(
                    "`quorum = 0` would let the join `{join_name}` go on before any branch is done; write at least 1, or remove `quorum` to wait for every branch"
                ),
            );
            None
        }
        _ => {
            let what = match fork.map {
                Some(max) => format!("its map takes at most {max} items"),
                None => format!("its fan-out starts {most} branches"),
            };
            cx.error_spanned_by(
                &q.lit,
                format!(
                    "the join `{join_name}` can never reach `quorum = {}`: {what}; lower the quorum to at most {most}",
                    q.lit.base10_digits()
                ),
            );
            None
        }
    }
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
/// branch's turn counts. With `expand`, a map's receiver is drawn once per
/// possible item (nodes past the agents, `from -> worker -> w2 -> .. ->
/// join`): the graph `MAX_HOPS` is computed on; without, once (the graph
/// whose nodes are agents, for the rules that name them).
fn chains(
    graph: &Graph,
    tokens: &[Ident],
    kinds: &[EdgeKind],
    forks: &[ForkModel],
    expand: bool,
) -> (Graph, Vec<Ident>) {
    let mut agents = graph.agents;
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
            // The map's other possible items, each a turn.
            let copies = if expand { fork.map.unwrap_or(1) } else { 1 };
            for _ in 1..copies {
                edges.push(Edge {
                    from: at,
                    to: Target::Agent(agents),
                    bound: None,
                });
                out_tokens.push(fork.token.clone());
                at = agents;
                agents += 1;
            }
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
        agents,
        entry: graph.entry,
        edges,
    };
    (analysis, out_tokens)
}
