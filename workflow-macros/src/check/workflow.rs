//! Rules for a `#[workflow]` module (guarantees 2-4): one `check_*` per
//! rule, each reporting into the context; the resolved graph comes out.

use std::collections::HashMap;

use syn::Ident;
use syn::ext::IdentExt;

use super::parallel::{EdgeKind, ForkModel};
use crate::ctxt::{Ctxt, suggestion};
use crate::graph::{Edge, Graph, Target};
use crate::model::value::{Effect, Number, OnReject};
use crate::model::workflow::Workflow;

/// The graph with the tokens to blame for each edge.
pub struct Resolved {
    pub graph: Graph,
    /// For each edge: the target's token in the sender's `to = [...]`.
    pub edge_tokens: Vec<Ident>,
    /// For each edge: a handoff, or a part of a fan-out.
    pub kinds: Vec<EdgeKind>,
    /// The fan-outs (`to = [parallel(..)]`).
    pub forks: Vec<ForkModel>,
    /// The hop cap: the computed bound, or the declared `max_hops` if lower.
    pub max_hops: u32,
}

/// Runs every workflow rule. Returns the resolved graph when it could be
/// built (even if other rules failed, so all errors are reported at once).
pub fn check(cx: &Ctxt, wf: &Workflow) -> Option<Resolved> {
    super::item::check(cx, wf);
    check_output(cx, wf);
    check_public_types(cx, wf);
    super::forbidden::check(cx, wf);
    check_tools(cx, wf);
    check_role_overlap(cx, wf);
    check_open_ended(cx, wf);
    check_numbers(cx, wf);
    if wf.agents.is_empty() {
        cx.error_spanned_by(
            &wf.name,
            "a workflow needs at least one `#[agent]` function",
        );
        return None;
    }
    // With a bad entry, go on from the first agent so every other error shows.
    let entry = check_entry(cx, wf);
    check_on_reject(cx, wf, entry);
    check_tool_effects(cx, wf);
    let (mut graph, mut edge_tokens, kinds, mut forks, all_resolved) =
        resolve_edges(cx, wf, entry.unwrap_or(0));
    // The rules below analyse each fan-out as the chain of turns it takes.
    let super::parallel::Chains {
        analysis,
        loops,
        loop_tokens,
        kinds,
        counting,
    } = super::parallel::resolve(cx, wf, &mut graph, &mut edge_tokens, kinds, &mut forks);
    // Reachability and ends are only meaningful on the graph as declared:
    // with a bad entry or target they would report the same mistake again.
    let all_parsed = wf.agents.iter().all(|a| !a.args.incomplete);
    if entry.is_some() && all_resolved && all_parsed {
        check_reachability(cx, wf, &analysis);
        check_ends(cx, wf, &analysis);
        check_hop_cap_reaches_end(cx, wf, &analysis);
    }
    check_unbounded_loops(cx, wf, &loops, &loop_tokens);
    // A handoff returned to its sender gives the sender one more turn, at
    // most `max` times per receiver and run.
    let returns: u64 = wf
        .agents
        .iter()
        .filter_map(|a| match &a.args.on_reject.as_ref()?.value {
            OnReject::Sender { max } => max.get(),
            _ => None,
        })
        .sum();
    let computed = counting.max_hops().unwrap_or(0).saturating_add(returns);
    if computed > u64::from(u32::MAX) {
        cx.error_spanned_by(
            &wf.name,
            format!(
                "the computed bound on agent turns ({computed}) does not fit in a u32; lower the loop bounds (`max = N`)"
            ),
        );
    }
    let declared = wf.args.max_hops.as_ref().and_then(Number::get);
    let max_hops = declared.map_or(computed, |d| d.min(computed));
    Some(Resolved {
        graph,
        edge_tokens,
        kinds,
        forks,
        max_hops: max_hops.min(u64::from(u32::MAX)) as u32,
    })
}

fn agent_names(wf: &Workflow) -> impl Iterator<Item = String> + '_ {
    wf.agents.iter().map(|a| a.name.unraw().to_string())
}

/// The entry must be given and be a declared agent.
fn check_entry(cx: &Ctxt, wf: &Workflow) -> Option<usize> {
    let Some(entry) = &wf.args.entry else {
        if wf.args.incomplete {
            return None; // the bad argument was reported; it may be this one
        }
        cx.error_spanned_by(
            &wf.name,
            "workflow has no entry agent; add `entry = <agent>` to `#[workflow(..)]`",
        );
        return None;
    };
    let found = wf
        .agents
        .iter()
        .position(|a| a.name.unraw() == entry.unraw());
    if found.is_none() {
        let names: Vec<String> = agent_names(wf).collect();
        cx.error_spanned_by(
            entry,
            format!(
                "entry `{entry}` is not an agent of this workflow{}",
                suggestion(&entry.unraw().to_string(), names.iter().map(String::as_str))
            ),
        );
    }
    found
}

/// The output type must be given: it is what `Next::End` carries.
fn check_output(cx: &Ctxt, wf: &Workflow) {
    if wf.args.output.is_none() && !wf.args.incomplete {
        cx.error_spanned_by(
            &wf.name,
            "workflow has no output type; add `output = <Type>` to `#[workflow(..)]` (the type `Next::End` carries)",
        );
    }
}

/// Types of the module that appear in generated public items (`Next`,
/// `State`, the tool types) must be `pub`.
fn check_public_types(cx: &Ctxt, wf: &Workflow) {
    struct Private<'w>(&'w [Ident], Vec<&'w Ident>, Vec<Ident>);
    impl<'a> syn::visit::Visit<'a> for Private<'_> {
        fn visit_path(&mut self, path: &'a syn::Path) {
            if path.segments.len() == 1
                && let Some(found) = self.0.iter().find(|p| **p == path.segments[0].ident)
            {
                self.1.push(found);
                self.2.push(path.segments[0].ident.clone());
            }
            syn::visit::visit_path(self, path);
        }
    }
    let invariants: Option<syn::Type> = wf.invariants.as_ref().map(|i| syn::parse_quote!(#i));
    let mut used: Vec<&syn::Type> = wf.agents.iter().map(|a| &a.input_ty).collect();
    used.extend(wf.args.output.iter());
    used.extend(wf.args.deps.iter());
    used.extend(invariants.iter());
    used.extend(wf.tools.iter().flat_map(|t| [&t.input_ty, &t.output_ty]));
    let mut reported: Vec<String> = Vec::new();
    for ty in used {
        let mut private = Private(&wf.private_types, Vec::new(), Vec::new());
        syn::visit::Visit::visit_type(&mut private, ty);
        for (decl, _use) in private.1.into_iter().zip(private.2) {
            let name = decl.unraw().to_string();
            if reported.contains(&name) {
                continue;
            }
            reported.push(name.clone());
            cx.error_spanned_by(
                decl,
                format!("`{name}` must be `pub`: it is carried by the workflow's generated public types (`Next`, `State`, the tools); write `pub struct {name}` (the module itself may stay private)"),
            );
        }
    }
}

/// Granted tools must be declared (two tools of one name are reported
/// with the items); a tool that needs an authority can only
/// be granted to that authority's owner.
fn check_tools(cx: &Ctxt, wf: &Workflow) {
    let owner: HashMap<String, &Ident> = wf
        .agents
        .iter()
        .flat_map(|a| {
            a.args
                .owns
                .iter()
                .map(move |o| (o.unraw().to_string(), &a.name))
        })
        .collect();
    for t in &wf.tools {
        if let Some(needs) = &t.needs
            && !owner.contains_key(&needs.unraw().to_string())
        {
            cx.error_spanned_by(
                needs,
                format!(
                    "tool `{}` needs authority `{needs}`, which no agent owns{}; add it to one agent's `owns = [...]`",
                    t.name,
                    suggestion(&needs.unraw().to_string(), owner.keys().map(String::as_str))
                ),
            );
        }
    }
    for a in &wf.agents {
        let mut granted: Vec<String> = Vec::new();
        for tool in &a.args.tools {
            let name = tool.unraw().to_string();
            if granted.contains(&name) {
                cx.error_spanned_by(tool, format!("tool `{tool}` is granted twice; keep one"));
                continue;
            }
            granted.push(name.clone());
            let Some(decl) = wf.tools.iter().find(|t| t.name.unraw() == tool.unraw()) else {
                cx.error_spanned_by(
                    tool,
                    format!(
                        "agent `{}` is granted tool `{tool}`, which is not declared{}; declare it with `#[tool]` in this module",
                        a.name,
                        suggestion(&name, wf.tools.iter().map(|t| t.name.unraw().to_string()).collect::<Vec<_>>().iter().map(String::as_str))
                    ),
                );
                continue;
            };
            if let Some(needs) = &decl.needs
                && let Some(owner) = owner.get(&needs.unraw().to_string())
                && *owner != &a.name
            {
                cx.error_spanned_by(
                    tool,
                    format!(
                        "agent `{}` is granted tool `{tool}`, which needs authority `{needs}` owned by `{owner}`; grant the tool to `{owner}` and hand the work to it",
                        a.name
                    ),
                );
            }
        }
    }
}

/// An authority declared `open_ended = [..]` that no agent owns (a typo,
/// or an authority that does not exist): reported on its name.
fn check_open_ended(cx: &Ctxt, wf: &Workflow) {
    let Some(open_ended) = &wf.args.open_ended else {
        return;
    };
    let owned: Vec<String> = wf
        .agents
        .iter()
        .flat_map(|a| &a.args.owns)
        .map(|o| o.unraw().to_string())
        .collect();
    for name in open_ended {
        if !owned.contains(&name.unraw().to_string()) {
            cx.error_spanned_by(
                name,
                format!(
                    "`open_ended` names authority `{name}`, which no agent owns; name an authority from an agent's `owns = [...]`"
                ),
            );
        }
    }
}

/// Role overlap: an authority owned by two agents is reported on both.
fn check_role_overlap(cx: &Ctxt, wf: &Workflow) {
    let mut owners: Vec<(String, Vec<(&Ident, &Ident)>)> = Vec::new();
    for a in &wf.agents {
        for o in &a.args.owns {
            let name = o.unraw().to_string();
            match owners.iter_mut().find(|(n, _)| *n == name) {
                Some((_, list)) => list.push((o, &a.name)),
                None => owners.push((name, vec![(o, &a.name)])),
            }
        }
    }
    for (authority, list) in owners {
        let mut names: Vec<String> = Vec::new();
        for (_, agent) in &list {
            let name = format!("`{agent}`");
            if !names.contains(&name) {
                names.push(name);
            }
        }
        for (i, (token, agent)) in list.iter().enumerate() {
            if list[..i].iter().any(|(_, a)| a.unraw() == agent.unraw()) {
                cx.error_spanned_by(
                    token,
                    format!("agent `{agent}` lists authority `{authority}` twice; keep one"),
                );
            } else if names.len() > 1 {
                cx.error_spanned_by(
                    token,
                    format!(
                        "role overlap: authority `{authority}` is owned by {}; an authority has exactly one owner: keep it on one agent and hand the others work through it",
                        names.join(" and ")
                    ),
                );
            }
        }
    }
}

/// A whole number from 1 to `max`: reported on its literal otherwise.
fn check_positive(cx: &Ctxt, n: &Number<u64>, what: &str, max: u64) {
    match &n.value {
        Ok(0) => cx.error_spanned_by(
            &n.lit,
            format!("`{what}` must be at least 1; write a whole number from 1 to {max}"),
        ),
        Ok(v) if *v > max => cx.error_spanned_by(
            &n.lit,
            format!("`{what}` is too large; write a whole number from 1 to {max}"),
        ),
        Ok(_) => {}
        Err(e) => cx.error_spanned_by(
            &n.lit,
            format!("`{what}` must be a whole number from 1 to {max}: {e}"),
        ),
    }
}

/// Numbers in arguments: loop bounds, timeouts, the hop cap, a tool's
/// version, retries and back-off.
fn check_numbers(cx: &Ctxt, wf: &Workflow) {
    if let Some(m) = &wf.args.max_hops {
        check_positive(cx, m, "max_hops", u64::from(u32::MAX));
    }
    for a in &wf.agents {
        if let Some(t) = &a.args.timeout_ms {
            check_positive(cx, t, "timeout_ms", u64::MAX);
        }
        if let Some(n) = &a.args.max_steps {
            check_positive(cx, n, "max_steps", u64::from(u32::MAX));
        }
        for t in &a.args.to {
            if let Some(b) = &t.bound {
                check_positive(cx, b, "max", u64::from(u32::MAX));
            }
        }
        if let Some(OnReject::Sender { max }) = a.args.on_reject.as_ref().map(|o| &o.value) {
            check_positive(cx, max, "max", u64::from(u32::MAX));
        }
    }
    for t in &wf.tools {
        if let Some(v) = &t.args.version {
            check_positive(cx, v, "version", u64::from(u32::MAX));
        }
        if let Some(Number { lit, value: Err(e) }) = &t.args.retries {
            cx.error_spanned_by(
                lit,
                format!(
                    "`retries` must be a whole number from 0 to {}: {e}",
                    u32::MAX
                ),
            );
        }
        if let Some(Number { lit, value: Err(e) }) = &t.args.backoff_ms {
            cx.error_spanned_by(
                lit,
                format!(
                    "`backoff_ms` must be a whole number of milliseconds from 0 to {}: {e}",
                    u64::MAX
                ),
            );
        }
    }
}

/// The entry's sender is the caller of `run`: a rejection cannot go back
/// to it.
fn check_on_reject(cx: &Ctxt, wf: &Workflow, entry: Option<usize>) {
    let Some(entry) = entry.and_then(|e| wf.agents.get(e)) else {
        return;
    };
    if let Some(o) = &entry.args.on_reject
        && let OnReject::Sender { .. } = o.value
    {
        cx.error_spanned_by(
            &o.token,
            format!(
                "`{}` is the entry: its sender is the caller of `run`, which cannot handle a returned handoff; use `abort` or `escalate`",
                entry.name
            ),
        );
    }
}

/// Every tool declares its effect (`read`, `write` or `destructive`: no
/// default, so a writing tool is never taken for a reading one); a tool that
/// changes the world needs an authority, so that exactly one agent owns it;
/// a guard is for a tool that changes the world.
fn check_tool_effects(cx: &Ctxt, wf: &Workflow) {
    for t in &wf.tools {
        // A misspelt value is reported where it was parsed.
        if t.args.effect.is_none() && !t.args.effect_written {
            cx.error_spanned_by(
                &t.name,
                format!(
                    "tool `{}` does not declare its effect: add `effect = read` (it only reads), `effect = write` (it changes state) or `effect = destructive` (it changes state in a way that cannot be undone) to its `#[tool(..)]`",
                    t.name
                ),
            );
        }
        if let (Some(guard), Some(effect)) = (&t.args.guard, &t.args.effect)
            && effect.value == Effect::Read
        {
            cx.error_spanned_by(
                guard,
                format!(
                    "tool `{}` has a guard but `effect = read`: a guard stops a tool before it changes the world, and a read tool changes nothing; declare `effect = write` or `effect = destructive`, or remove the guard",
                    t.name
                ),
            );
        }
        if let Some(effect) = &t.args.effect
            && effect.value != Effect::Read
            && t.needs.is_none()
        {
            let effect = &effect.token;
            cx.error_spanned_by(
                effect,
                format!(
                    "tool `{}` has `effect = {effect}` but needs no authority: a tool that changes the world must have one owner; add `needs = Authority` (an authority exactly one agent owns)",
                    t.name
                ),
            );
        }
    }
}

/// Resolves `to = [...]` into edges; reports undeclared targets (with a
/// suggestion), duplicates and bounds on `END`.
/// The edges as declared, with their tokens and kinds (a fan-out's starts
/// marked; its outcomes and join are resolved by `parallel::resolve`), and
/// the fan-outs.
type Edges = (Graph, Vec<Ident>, Vec<EdgeKind>, Vec<ForkModel>, bool);

fn resolve_edges(cx: &Ctxt, wf: &Workflow, entry: usize) -> Edges {
    let mut all_resolved = true;
    let mut kinds = Vec::new();
    let mut forks: Vec<ForkModel> = Vec::new();
    let index: HashMap<String, usize> = wf
        .agents
        .iter()
        .enumerate()
        .map(|(i, a)| (a.name.unraw().to_string(), i))
        .collect();
    let mut edges = Vec::new();
    let mut tokens = Vec::new();
    for (from, a) in wf.agents.iter().enumerate() {
        let mut seen: Vec<String> = Vec::new();
        for t in &a.args.to {
            let mapped = t.map.as_ref().map(|m| vec![m.agent.clone()]);
            if let Some(branches) = t.branches.as_ref().or(mapped.as_ref()) {
                if forks.iter().any(|f| f.from == from) {
                    cx.error_spanned_by(
                        &t.name,
                        "an agent starts one fan-out: list every branch in one `parallel(..)`, or map one receiver with `map(..)`",
                    );
                    continue;
                }
                let mut fork = ForkModel {
                    from,
                    branches: Vec::new(),
                    token: t.name.clone(),
                    map: t
                        .map
                        .as_ref()
                        .map(|m| super::parallel::map_bound(cx, &t.name, m)),
                    quorum: None,
                    join: None,
                    edges: Vec::new(),
                    regions: Vec::new(),
                    nested: Vec::new(),
                    inside: None,
                    exits: Vec::new(),
                    join_edge: None,
                    clean: false,
                };
                for b in branches {
                    let Some(&i) = index.get(&b.unraw().to_string()) else {
                        let names: Vec<String> = agent_names(wf).collect();
                        cx.error_spanned_by(
                            b,
                            format!(
                                "branch `{b}` is not an agent of this workflow{}; declare it with `#[agent]` in this module",
                                suggestion(&b.unraw().to_string(), names.iter().map(String::as_str))
                            ),
                        );
                        all_resolved = false;
                        continue;
                    };
                    if fork.branches.contains(&i) || i == from {
                        cx.error_spanned_by(
                            b,
                            format!(
                                "`{b}` cannot be a branch twice, nor a branch of its own fan-out"
                            ),
                        );
                        continue;
                    }
                    kinds.push(EdgeKind::Start {
                        fork: forks.len(),
                        branch: fork.branches.len(),
                    });
                    edges.push(Edge {
                        from,
                        to: Target::Agent(i),
                        bound: None,
                    });
                    tokens.push(b.clone());
                    fork.edges.push((edges.len() - 1, None));
                    fork.branches.push(i);
                }
                forks.push(fork);
                continue;
            }
            let name = t.name.unraw().to_string();
            if seen.contains(&name) {
                cx.error_spanned_by(
                    &t.name,
                    format!("`{name}` is listed twice in `to = [...]`; keep one"),
                );
                continue;
            }
            seen.push(name.clone());
            // A bound that does not parse is reported (here or by
            // `check_numbers`); the edge still counts as bounded so that its
            // loop is not reported too.
            if let Some(e) = &t.bad_bound {
                cx.syn_error(e.clone());
            }
            // (Counted as 1 in the bound on hops, which it must not inflate.)
            let bound = match (&t.bound, &t.bad_bound) {
                (Some(b), _) => Some(b.get().and_then(|b| u32::try_from(b).ok()).unwrap_or(1)),
                (None, Some(_)) => Some(1),
                (None, None) => None,
            };
            let to = if name == "END" {
                if let Some(b) = &t.bound {
                    cx.error_spanned_by(
                        &b.lit,
                        "`END` takes no loop bound: a run ends once; remove `(max = ..)`",
                    );
                }
                Target::End
            } else if let Some(&i) = index.get(&name) {
                Target::Agent(i)
            } else {
                let mut names: Vec<String> = agent_names(wf).collect();
                names.push("END".to_owned());
                cx.error_spanned_by(
                    &t.name,
                    format!(
                        "handoff to undeclared agent `{name}`{}; declare it with `#[agent]` in this module, or use `END` to finish",
                        suggestion(&name, names.iter().map(String::as_str))
                    ),
                );
                all_resolved = false;
                continue;
            };
            edges.push(Edge { from, to, bound });
            tokens.push(t.name.clone());
            kinds.push(EdgeKind::Plain);
        }
    }
    let graph = Graph {
        agents: wf.agents.len(),
        entry,
        edges,
    };
    (graph, tokens, kinds, forks, all_resolved)
}

/// Every agent must be reachable from the entry.
fn check_reachability(cx: &Ctxt, wf: &Workflow, g: &Graph) {
    let entry = &wf.agents[g.entry].name;
    for (a, reachable) in wf.agents.iter().zip(g.reachable_from_entry()) {
        if !reachable {
            cx.error_spanned_by(
                &a.name,
                format!(
                    "agent `{}` cannot be reached from the entry `{entry}`; add it to some agent's `to = [...]`, or remove it",
                    a.name
                ),
            );
        }
    }
}

/// Every agent must have a path to `END`. Reported where the dead end is:
/// on agents none of whose targets leads elsewhere that cannot end (an
/// agent whose only fault is its receiver is left to that receiver's error).
fn check_ends(cx: &Ctxt, wf: &Workflow, g: &Graph) {
    let ends = g.can_reach_end();
    let reach = |from: usize| {
        let mut h = g.clone();
        h.entry = from;
        h.reachable_from_entry()
    };
    for (i, a) in wf.agents.iter().enumerate() {
        if ends[i] {
            continue;
        }
        let from_here = reach(i);
        // A dead end: every agent reachable from here can come back here.
        let dead_end = (0..wf.agents.len())
            .filter(|&b| from_here[b])
            .all(|b| reach(b)[i]);
        if !dead_end {
            continue;
        }
        let token = a.args.to_key.as_ref().unwrap_or(&a.name);
        cx.error_spanned_by(
            token,
            format!(
                "agent `{}` has no path to `END`: every run through it would be cut by the hop cap; add `END` to its `to = [...]` or hand off to an agent that can end",
                a.name
            ),
        );
    }
}

/// With bounded edges removed the graph must be acyclic; each cycle is
/// reported on the edge that closes it, with its path.
fn check_unbounded_loops(cx: &Ctxt, wf: &Workflow, g: &Graph, tokens: &[Ident]) {
    for cycle in g.unbounded_cycles() {
        let path: Vec<String> = cycle
            .path
            .iter()
            .map(|&a| wf.agents[a].name.unraw().to_string())
            .collect();
        let back = &tokens[cycle.closing_edge];
        cx.error_spanned_by(
            back,
            format!(
                "unbounded loop: {}; every cycle needs a bounded edge: write `{back}(max = N)` here (a global hop cap is not a bound)",
                path.join(" -> ")
            ),
        );
    }
}

/// A declared `max_hops` lower than the shortest run from the entry to
/// `END` would reject every run at the hop cap: reported on its value.
fn check_hop_cap_reaches_end(cx: &Ctxt, wf: &Workflow, g: &Graph) {
    let Some(declared) = &wf.args.max_hops else {
        return;
    };
    let (Some(cap), Some(run)) = (declared.get(), g.shortest_run()) else {
        return; // a bad number, or no run can end: both reported already
    };
    let needs = run.len() as u64;
    if cap == 0 || cap >= needs {
        return;
    }
    let path: Vec<String> = run
        .iter()
        .map(|&a| wf.agents[a].name.unraw().to_string())
        .chain(["END".to_owned()])
        .collect();
    cx.error_spanned_by(
        &declared.lit,
        format!(
            "`max_hops = {cap}` stops every run: the shortest run needs {needs} hops ({}); raise `max_hops` to at least {needs}, or remove it (the computed bound applies)",
            path.join(" -> ")
        ),
    );
}
