use super::*;
use proptest::prelude::*;

fn edge(from: usize, to: Option<usize>, bound: Option<u32>) -> Edge {
    Edge {
        from,
        to: to.map_or(Target::End, Target::Agent),
        bound,
    }
}

/// planner -> worker -> reviewer -> (worker, max 3 | END)
fn review_loop(bound: Option<u32>) -> Graph {
    Graph {
        agents: 3,
        entry: 0,
        edges: vec![
            edge(0, Some(1), None),
            edge(1, Some(2), None),
            edge(2, Some(1), bound),
            edge(2, None, None),
        ],
    }
}

#[test]
fn bounded_loop_has_a_bound() {
    let g = review_loop(Some(3));
    assert!(g.unbounded_cycles().is_empty());
    // planner worker reviewer, then worker reviewer three times: 3 + 3*2.
    assert_eq!(g.max_hops(), Some(9));
    assert_eq!(g.upper_bound_on_hops(), 12);
}

#[test]
fn a_search_too_large_falls_back_to_the_upper_bound() {
    // Two loops of bound 2000 each: 3 * 2001 * 2001 states, more than the
    // search visits; the bound is then (B + 1) * L.
    let g = Graph {
        agents: 3,
        entry: 0,
        edges: vec![
            edge(0, Some(1), None),
            edge(1, Some(0), Some(2000)),
            edge(1, Some(2), None),
            edge(2, Some(1), Some(2000)),
            edge(2, None, None),
        ],
    };
    assert_eq!(g.max_hops(), Some(g.upper_bound_on_hops()));
    assert_eq!(g.upper_bound_on_hops(), 3 * 4001);
    // One loop of bound 1000 is searched exactly, without overflowing.
    let g = review_loop(Some(1000));
    assert_eq!(g.max_hops(), Some(3 + 2 * 1000));
}

#[test]
fn unbounded_loop_is_reported_on_the_closing_edge() {
    let g = review_loop(None);
    let cycles = g.unbounded_cycles();
    assert_eq!(
        cycles,
        vec![Cycle {
            closing_edge: 2,
            path: vec![1, 2, 1]
        }]
    );
    assert_eq!(g.max_hops(), None);
}

#[test]
fn self_loop_is_a_cycle() {
    let g = Graph {
        agents: 1,
        entry: 0,
        edges: vec![edge(0, Some(0), None), edge(0, None, None)],
    };
    assert_eq!(g.unbounded_cycles()[0].path, vec![0, 0]);
}

#[test]
fn the_shortest_run_counts_the_agents_to_the_last_turn() {
    // planner -> worker -> reviewer -> END: three turns, whatever the loop.
    assert_eq!(review_loop(Some(3)).shortest_run(), Some(vec![0, 1, 2]));
    // A shortcut from the entry to the end.
    let mut g = review_loop(Some(3));
    g.edges.push(edge(0, None, None));
    assert_eq!(g.shortest_run(), Some(vec![0]));
    // No edge to the end at all.
    let g = Graph {
        agents: 2,
        entry: 0,
        edges: vec![edge(0, Some(1), None), edge(1, Some(0), Some(2))],
    };
    assert_eq!(g.shortest_run(), None);
}

#[test]
fn reachability_and_ends() {
    let g = Graph {
        agents: 4,
        entry: 0,
        edges: vec![
            edge(0, Some(1), None),
            edge(1, None, None),
            edge(2, Some(3), None),
        ],
    };
    assert_eq!(g.reachable_from_entry(), vec![true, true, false, false]);
    assert_eq!(g.can_reach_end(), vec![true, true, false, false]);
}

// ---- brute-force oracles ----

/// Transitive closure over unbounded agent edges (Floyd-Warshall).
fn oracle_has_unbounded_cycle(g: &Graph) -> bool {
    let n = g.agents;
    let mut r = vec![vec![false; n]; n];
    for e in &g.edges {
        if let (Target::Agent(b), None) = (e.to, e.bound) {
            r[e.from][b] = true;
        }
    }
    for k in 0..n {
        for i in 0..n {
            for j in 0..n {
                if r[i][k] && r[k][j] {
                    r[i][j] = true;
                }
            }
        }
    }
    (0..n).any(|i| r[i][i])
}

/// The longest walk from the entry, in agent turns, that respects every
/// edge bound (exhaustive search; only called on graphs without unbounded
/// cycles, where every walk is finite).
fn oracle_longest_walk(g: &Graph) -> u64 {
    fn go(g: &Graph, at: usize, uses: &mut Vec<u32>, depth: u64, best: &mut u64) {
        *best = (*best).max(depth);
        for (i, e) in g.edges.iter().enumerate() {
            if e.from != at {
                continue;
            }
            if let Target::Agent(b) = e.to {
                if let Some(limit) = e.bound
                    && uses[i] >= limit
                {
                    continue;
                }
                uses[i] += 1;
                go(g, b, uses, depth + 1, best);
                uses[i] -= 1;
            }
        }
    }
    let mut best = 0;
    go(g, g.entry, &mut vec![0; g.edges.len()], 1, &mut best);
    best
}

/// The fewest agent turns of a walk from the entry that respects every
/// edge bound and ends at `END` (exhaustive search over walks of at most
/// `agents` turns; a shortest one visits no agent twice).
fn oracle_shortest_run(g: &Graph) -> Option<u64> {
    fn go(g: &Graph, at: usize, uses: &mut Vec<u32>, depth: u64, best: &mut Option<u64>) {
        if depth > g.agents as u64 {
            return;
        }
        for (i, e) in g.edges.iter().enumerate() {
            if e.from != at {
                continue;
            }
            if e.bound.is_some_and(|limit| uses[i] >= limit) {
                continue;
            }
            match e.to {
                Target::End => *best = Some(best.map_or(depth, |b| b.min(depth))),
                Target::Agent(b) => {
                    uses[i] += 1;
                    go(g, b, uses, depth + 1, best);
                    uses[i] -= 1;
                }
            }
        }
    }
    let mut best = None;
    go(g, g.entry, &mut vec![0; g.edges.len()], 1, &mut best);
    best
}

fn oracle_reachable(g: &Graph) -> Vec<bool> {
    let n = g.agents;
    let mut seen = vec![false; n];
    seen[g.entry] = true;
    for _ in 0..n {
        for e in &g.edges {
            if let Target::Agent(b) = e.to
                && seen[e.from]
            {
                seen[b] = true;
            }
        }
    }
    seen
}

fn arb_graph() -> impl Strategy<Value = Graph> {
    (1usize..6).prop_flat_map(|n| {
        let edge = (
            0..n,
            prop::option::weighted(0.85, 0..n),
            prop::option::of(1u32..3),
        )
            .prop_map(|(from, to, bound)| edge(from, to, bound));
        (Just(n), 0..n, prop::collection::vec(edge, 0..9)).prop_map(|(agents, entry, edges)| {
            Graph {
                agents,
                entry,
                edges,
            }
        })
    })
}

proptest! {
    #[test]
    fn cycle_detection_matches_closure(g in arb_graph()) {
        prop_assert_eq!(!g.unbounded_cycles().is_empty(), oracle_has_unbounded_cycle(&g));
    }

    #[test]
    fn every_reported_cycle_is_a_real_unbounded_cycle(g in arb_graph()) {
        for c in g.unbounded_cycles() {
            prop_assert_eq!(c.path.first(), c.path.last());
            let closing = g.edges[c.closing_edge];
            prop_assert!(closing.bound.is_none());
            for w in c.path.windows(2) {
                prop_assert!(g.edges.iter().any(|e| e.from == w[0] && e.to == Target::Agent(w[1]) && e.bound.is_none()));
            }
        }
    }

    #[test]
    fn max_hops_is_the_longest_walk(g in arb_graph()) {
        match g.max_hops() {
            None => prop_assert!(oracle_has_unbounded_cycle(&g)),
            Some(exact) => {
                prop_assert_eq!(oracle_longest_walk(&g), exact);
                prop_assert!(exact <= g.upper_bound_on_hops());
            }
        }
    }

    #[test]
    fn shortest_run_matches_oracle(g in arb_graph()) {
        let run = g.shortest_run();
        prop_assert_eq!(run.as_ref().map(|p| p.len() as u64), oracle_shortest_run(&g));
        if let Some(path) = run {
            prop_assert_eq!(path[0], g.entry);
            for w in path.windows(2) {
                prop_assert!(g.edges.iter().any(|e| e.from == w[0] && e.to == Target::Agent(w[1])));
            }
            let last = path[path.len() - 1];
            prop_assert!(g.edges.iter().any(|e| e.from == last && e.to == Target::End));
        }
    }

    #[test]
    fn no_run_is_longer_than_max_hops_or_shorter_than_the_shortest(g in arb_graph()) {
        if let (Some(shortest), Some(max)) = (g.shortest_run(), g.max_hops()) {
            prop_assert!(shortest.len() as u64 <= max);
        }
    }

    #[test]
    fn reachability_matches_oracle(g in arb_graph()) {
        prop_assert_eq!(g.reachable_from_entry(), oracle_reachable(&g));
    }

    #[test]
    fn ends_match_oracle(g in arb_graph()) {
        let ends = g.can_reach_end();
        for (a, &ends_a) in ends.iter().enumerate() {
            let mut h = g.clone();
            h.entry = a;
            let reach = oracle_reachable(&h);
            let oracle = g.edges.iter().any(|e| e.to == Target::End && reach[e.from]);
            prop_assert_eq!(ends_a, oracle);
        }
    }
}
