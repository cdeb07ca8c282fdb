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
    /// Each branch's edges: (start, outcome), by index into the edges (the
    /// outcome: the branch agent's own edge to the join, else the first of
    /// its branch's).
    pub edges: Vec<(usize, Option<usize>)>,
    /// Each branch's agents: its first, then the agents its turns hand on
    /// to inside the branch (a branch of more than one turn), in the order
    /// found.
    pub regions: Vec<Vec<usize>>,
    /// Each branch's edges to the join (by index into the edges), from any
    /// of its agents.
    pub exits: Vec<Vec<usize>>,
    /// The fan-outs inside its branches: (the branch, the fan-out's
    /// index), in branch order. The nested fan-out's join is in the branch's
    /// region, its branches are not (they are the nested fan-out's own).
    pub nested: Vec<(usize, usize)>,
    /// A fan-out inside a branch of another: (that fan-out's index, the
    /// branch).
    pub inside: Option<(usize, usize)>,
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
    /// Whether a branch takes more than one turn (its turns hand on inside
    /// it): the fan-out's turn then runs its branches in rounds.
    pub fn multi_turn(&self) -> bool {
        self.regions.iter().any(|r| r.len() > 1)
    }

    /// The branch agent `agent` belongs to, if any.
    pub fn branch_of(&self, agent: usize) -> Option<usize> {
        self.regions.iter().position(|r| r.contains(&agent))
    }

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

/// The graphs the workflow rules analyse, each fan-out drawn as the chain
/// of turns it takes.
pub struct Chains {
    /// For reachability and ends.
    pub analysis: Graph,
    /// For loops: `analysis` without the handoffs into a branch from
    /// outside it (reported as such).
    pub loops: Graph,
    /// The token of each edge of `loops`.
    pub loop_tokens: Vec<Ident>,
    /// The kind of each edge of the declared graph.
    pub kinds: Vec<EdgeKind>,
    /// The graph whose longest walk is `MAX_HOPS` (each map's receiver
    /// drawn once per possible item).
    pub counting: Graph,
}

/// Checks every fan-out and join, marks the edges of each, adds each join's
/// edge, and returns the graphs to analyse.
pub fn resolve(
    cx: &Ctxt,
    wf: &Workflow,
    graph: &mut Graph,
    tokens: &mut Vec<Ident>,
    mut kinds: Vec<EdgeKind>,
    forks: &mut [ForkModel],
) -> Chains {
    let name = |a: usize| wf.agents[a].name.unraw().to_string();
    let mut used_joins = vec![false; wf.agents.len()];
    // Every fan-out's join first: a fan-out inside a branch is followed
    // through its join.
    let joins: Vec<Option<usize>> = forks
        .iter()
        .map(|fork| {
            let mut want: Vec<String> = fork.branches.iter().map(|&b| name(b)).collect();
            want.sort();
            wf.agents.iter().position(|a| {
                let mut names: Vec<String> = a
                    .args
                    .join
                    .iter()
                    .map(|j| j.name.unraw().to_string())
                    .collect();
                names.sort();
                !names.is_empty() && names == want
            })
        })
        .collect();
    let starts: Vec<(usize, usize)> = forks.iter().map(|f| f.from).zip(0..).collect();
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
        // Each branch: the agents its turns hand on to inside it, up to the
        // join; nothing else.
        resolve_regions(
            cx, wf, graph, tokens, &mut kinds, f, fork, join, &joins, &starts,
        );
        graph.edges.push(Edge {
            from: fork.from,
            to: Target::Agent(join),
            bound: None,
        });
        tokens.push(fork.token.clone());
        kinds.push(EdgeKind::Join { fork: f });
        fork.join_edge = Some(graph.edges.len() - 1);
    }
    check_nesting(cx, wf, forks);
    for fork in forks.iter().filter(|f| f.join.is_some()) {
        // A nested fan-out's agents are in the branch it is in.
        let mut regions = fork.regions.clone();
        for &(k, g) in &fork.nested {
            let inner = forks[g].regions.iter().flatten().copied();
            regions[k].extend(inner);
        }
        check_write_tools(cx, wf, fork, &regions);
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
    // An agent inside a branch receives from its fan-out (its first) or
    // from its branch only.
    for (i, e) in graph.edges.iter().enumerate() {
        let Target::Agent(to) = e.to else { continue };
        if kinds[i] != EdgeKind::Plain {
            continue;
        }
        for fork in forks.iter() {
            let Some(k) = fork.branch_of(to) else {
                continue;
            };
            if fork.regions[k].contains(&e.from) {
                continue;
            }
            let first = name(fork.branches[k]);
            let what = if to == fork.branches[k] {
                format!(
                    "agent `{}` is a branch of the fan-out of `{}`: it receives from its fan-out (or from its own branch) only; hand off to the fan-out's agent instead",
                    name(to),
                    name(fork.from)
                )
            } else {
                format!(
                    "agent `{}` is inside branch `{first}` of the fan-out of `{}`, and `{}` hands off to it from outside that branch: an agent inside a branch receives from its branch only; give `{}` an agent of its own",
                    name(to),
                    name(fork.from),
                    name(e.from),
                    name(e.from)
                )
            };
            cx.error_spanned_by(&tokens[i], what);
        }
    }
    let (analysis, _) = chains(graph, tokens, &kinds, forks, false, true);
    let (loops, loop_tokens) = chains(graph, tokens, &kinds, forks, false, false);
    let (counting, _) = chains(graph, tokens, &kinds, forks, true, true);
    Chains {
        analysis,
        loops,
        loop_tokens,
        kinds,
        counting,
    }
}

/// Branch by branch: the agents its turns hand on to (its region), its
/// edges to the join (marked as its outcomes), and the rules: a branch
/// hands on inside itself or to its join only (never to `END`, back to the
/// fan-out's agent, or into another branch), joins inside itself any fan-out it starts,
/// reaches its join; a map's or a quorum's branches take one turn.
#[allow(clippy::too_many_arguments)]
fn resolve_regions(
    cx: &Ctxt,
    wf: &Workflow,
    graph: &Graph,
    tokens: &[Ident],
    kinds: &mut [EdgeKind],
    f: usize,
    fork: &mut ForkModel,
    join: usize,
    joins: &[Option<usize>],
    starts: &[(usize, usize)],
) {
    let name = |a: usize| wf.agents[a].name.unraw().to_string();
    let from = name(fork.from);
    let join_name = name(join);
    let mut owner: Vec<Option<usize>> = vec![None; wf.agents.len()];
    for (k, &b) in fork.branches.iter().enumerate() {
        if owner[b].is_none() {
            owner[b] = Some(k);
        }
    }
    fork.regions = fork.branches.iter().map(|&b| vec![b]).collect();
    fork.exits = vec![Vec::new(); fork.branches.len()];
    for k in 0..fork.branches.len() {
        let first = name(fork.branches[k]);
        let mut next = 0;
        while let Some(&x) = fork.regions[k].get(next) {
            next += 1;
            // A fan-out from `x`, inside this branch: followed through its
            // join, which is in the branch.
            for &(from, g) in starts {
                if from != x || g == f || fork.nested.iter().any(|&(_, n)| n == g) {
                    continue;
                }
                fork.nested.push((k, g));
                if let Some(j) = joins[g] {
                    match owner[j] {
                        None => {
                            owner[j] = Some(k);
                            fork.regions[k].push(j);
                        }
                        Some(o) if o == k => {}
                        Some(_) => fork.clean = false,
                    }
                } else {
                    fork.clean = false;
                }
            }
            for (i, e) in graph.edges.iter().enumerate() {
                if e.from != x {
                    continue;
                }
                match (kinds[i], e.to) {
                    (EdgeKind::Plain, Target::Agent(j)) if j == join => {
                        kinds[i] = EdgeKind::Outcome { fork: f, branch: k };
                        fork.exits[k].push(i);
                    }
                    (EdgeKind::Plain, Target::End) => {
                        fork.clean = false;
                        cx.error_spanned_by(
                            &tokens[i],
                            format!(
                                "agent `{}` is in branch `{first}` of the fan-out of `{from}`: `END` would let the branch escape its join `{join_name}`, which waits for its outcome; hand on to `{join_name}` (or to an agent of the branch) and decide in the join whether the run ends",
                                name(x)
                            ),
                        );
                    }
                    (EdgeKind::Plain, Target::Agent(y)) if y == fork.from => {
                        fork.clean = false;
                        cx.error_spanned_by(
                            &tokens[i],
                            format!(
                                "agent `{}` is in branch `{first}` of the fan-out of `{from}`: handing back to `{from}` would let the branch escape its join `{join_name}`; hand on to `{join_name}`, which may hand back to `{from}`",
                                name(x)
                            ),
                        );
                    }
                    (EdgeKind::Plain, Target::Agent(y)) => match owner[y] {
                        Some(o) if o == k => {}
                        Some(o) => {
                            fork.clean = false;
                            cx.error_spanned_by(
                                &tokens[i],
                                format!(
                                    "agent `{}` is in branch `{first}` of the fan-out of `{from}`, and `{}` is in branch `{}`: branches run at the same time and meet only at the join `{join_name}`; hand on to `{join_name}` instead",
                                    name(x),
                                    name(y),
                                    name(fork.branches[o])
                                ),
                            );
                        }
                        None => {
                            owner[y] = Some(k);
                            fork.regions[k].push(y);
                        }
                    },
                    _ => {}
                }
            }
        }
        if fork.exits[k].is_empty() {
            fork.clean = false;
            let agent = &wf.agents[fork.branches[k]];
            let at = agent.args.to_key.as_ref().unwrap_or(&agent.name);
            cx.error_spanned_by(
                at,
                format!(
                    "branch `{first}` of the fan-out of `{from}` never reaches its join `{join_name}`: no agent of the branch hands on to it; write `to = [{join_name}]` on its last agent"
                ),
            );
        }
        let own = fork.exits[k]
            .iter()
            .copied()
            .find(|&i| graph.edges[i].from == fork.branches[k]);
        fork.edges[k].1 = own.or(fork.exits[k].first().copied());
    }
    // The first branch of more than one turn: its first and second agents.
    let Some((long, second)) = fork
        .regions
        .iter()
        .find_map(|r| Some((name(r[0]), name(*r.get(1)?))))
    else {
        return;
    };
    if fork.map.is_some() {
        fork.clean = false;
        cx.error_spanned_by(
            &fork.token,
            format!(
                "the items of `{from}`'s map take one turn each: `{long}` hands on to `{second}` inside the map, which is not built yet; hand on to the join `{join_name}`, and from there to the next step"
            ),
        );
    }
    if let (Some(_), Some(q)) = (fork.quorum, wf.agents[join].args.quorum.as_ref()) {
        fork.clean = false;
        cx.error_spanned_by(
            &q.lit,
            format!(
                "the join `{join_name}` waits for a quorum, and branch `{long}` takes more than one turn: a quorum is counted over branches of one turn only; remove `quorum`, or make each branch one turn"
            ),
        );
    }
}

/// A fan-out inside a branch of another (nested, at any depth): its join
/// in the same branch. Marks each nested fan-out, and the outer one unclean
/// when a nested one is. (A join outside the branch is reported first as
/// the branch entered or crossed; the check stays so that codegen never
/// sees one.)
fn check_nesting(cx: &Ctxt, wf: &Workflow, forks: &mut [ForkModel]) {
    let name = |a: usize| wf.agents[a].name.unraw().to_string();
    let pairs: Vec<(usize, usize, usize)> = forks
        .iter()
        .enumerate()
        .flat_map(|(f, fork)| fork.nested.iter().map(move |&(k, g)| (f, k, g)))
        .collect();
    for &(f, k, g) in &pairs {
        forks[g].inside = Some((f, k));
    }
    for &(f, k, g) in &pairs {
        let (outer, inner) = (&forks[f], &forks[g]);
        let from = name(inner.from);
        let branch = name(outer.branches[k]);
        let outer_from = name(outer.from);
        let why = if inner.join.is_some_and(|j| outer.branch_of(j) != Some(k)) {
            Some(format!(
                "agent `{from}` is in branch `{branch}` of the fan-out of `{outer_from}`, and the join of its own fan-out is not in that branch: a fan-out inside a branch is joined inside it; give the branch a join of its own"
            ))
        } else {
            None
        };
        if let Some(why) = &why {
            cx.error_spanned_by(&forks[g].token, why);
            forks[g].clean = false;
        }
    }
    // A fan-out with a nested one that failed its rules is not generated
    // either (as deep as the nesting goes).
    for _ in 0..pairs.len() {
        for &(f, _, g) in &pairs {
            if !forks[g].clean {
                forks[f].clean = false;
            }
        }
    }
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
fn check_write_tools(cx: &Ctxt, wf: &Workflow, fork: &ForkModel, regions: &[Vec<usize>]) {
    let writes = |tool: &Ident| {
        wf.tools.iter().any(|t| {
            t.name.unraw() == tool.unraw()
                && matches!(
                    t.args.effect.as_ref().map(|e| &e.value),
                    Some(Effect::Write | Effect::Destructive)
                )
        })
    };
    // Each write tool and the branch that holds it first.
    let mut held: Vec<(String, usize)> = Vec::new();
    for (k, region) in regions.iter().enumerate() {
        for tool in region.iter().flat_map(|&b| &wf.agents[b].args.tools) {
            if !writes(tool) {
                continue;
            }
            let key = tool.unraw().to_string();
            match held.iter().find(|(t, _)| *t == key) {
                Some((_, other)) if *other != k => cx.error_spanned_by(
                    tool,
                    format!(
                        "branches `{}` and `{}` of the fan-out of `{}` run at the same time and both hold write tool `{key}`: two turns could apply the same change; grant it to one of them, or move the write after the join",
                        wf.agents[fork.branches[*other]].name.unraw(),
                        wf.agents[fork.branches[k]].name.unraw(),
                        wf.agents[fork.from].name.unraw(),
                    ),
                ),
                Some(_) => {}
                None => held.push((key, k)),
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
    entering: bool,
) -> (Graph, Vec<Ident>) {
    let mut agents = graph.agents;
    let mut edges = Vec::new();
    let mut out_tokens = Vec::new();
    for (i, e) in graph.edges.iter().enumerate() {
        // A handoff into a branch from outside it is reported (above): in
        // the chains it would close loops the graph does not have, so the
        // graph loops are looked for on leaves it out.
        if !entering
            && let Target::Agent(to) = e.to
            && forks.iter().any(|f| {
                f.branch_of(to)
                    .is_some_and(|k| !f.regions[k].contains(&e.from))
            })
        {
            continue;
        }
        if kinds.get(i).is_none_or(|k| *k == EdgeKind::Plain) {
            edges.push(*e);
            out_tokens.push(tokens[i].clone());
        }
    }
    for fork in forks {
        // The agents the previous branch's last turn can be taken by: any
        // of its agents (a branch ends where a turn fails or hands on a
        // refused step, and the join still follows).
        let mut ats = vec![fork.from];
        for (k, &b) in fork.branches.iter().enumerate() {
            for &at in &ats {
                edges.push(Edge {
                    from: at,
                    to: Target::Agent(b),
                    bound: None,
                });
                out_tokens.push(fork.token.clone());
            }
            ats = fork.regions.get(k).cloned().unwrap_or_else(|| vec![b]);
            let mut at = b;
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
            if copies > 1 {
                ats = vec![at];
            }
        }
        if let Some(join) = fork.join {
            for &at in &ats {
                edges.push(Edge {
                    from: at,
                    to: Target::Agent(join),
                    bound: None,
                });
                out_tokens.push(fork.token.clone());
            }
        }
    }
    let analysis = Graph {
        agents,
        entry: graph.entry,
        edges,
    };
    (analysis, out_tokens)
}
