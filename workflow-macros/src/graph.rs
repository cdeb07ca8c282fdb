//! Graph analysis of a workflow: reachability, paths to the end, unbounded
//! cycles, the upper bound on hops and the shortest run. Plain data in, plain data out; unit-
//! and property-tested against brute-force oracles.

/// The most states the exact search for [`Graph::max_hops`] visits before
/// it settles for the upper bound (a few hundred milliseconds of a build).
pub const EXACT_SEARCH_STATES: u64 = 1 << 20;

/// Where an edge goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// The agent at this index.
    Agent(usize),
    /// The end of the run.
    End,
}

/// A handoff edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Edge {
    pub from: usize,
    pub to: Target,
    /// `Some(n)`: the edge may be taken at most `n` times in a run.
    pub bound: Option<u32>,
}

/// A workflow graph: agents `0..agents`, entry, edges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Graph {
    pub agents: usize,
    pub entry: usize,
    pub edges: Vec<Edge>,
}

/// A cycle made only of unbounded edges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cycle {
    /// The edge (index into `Graph::edges`) that closes the cycle.
    pub closing_edge: usize,
    /// The agents along the cycle, starting and ending at the same agent.
    pub path: Vec<usize>,
}

impl Graph {
    fn successors(&self, agent: usize, bounded_too: bool) -> impl Iterator<Item = (usize, &Edge)> {
        self.edges
            .iter()
            .enumerate()
            .filter(move |(_, e)| e.from == agent && (bounded_too || e.bound.is_none()))
    }

    /// `reachable[a]`: agent `a` can be reached from the entry.
    pub fn reachable_from_entry(&self) -> Vec<bool> {
        let mut seen = vec![false; self.agents];
        if self.entry >= self.agents {
            return seen;
        }
        let mut stack = vec![self.entry];
        seen[self.entry] = true;
        while let Some(a) = stack.pop() {
            for (_, e) in self.successors(a, true) {
                if let Target::Agent(b) = e.to
                    && !seen[b]
                {
                    seen[b] = true;
                    stack.push(b);
                }
            }
        }
        seen
    }

    /// `ends[a]`: some path leads from agent `a` to the end.
    pub fn can_reach_end(&self) -> Vec<bool> {
        let mut ends = vec![false; self.agents];
        // Fixed point over the reverse edges; graphs are small.
        let mut changed = true;
        while changed {
            changed = false;
            for e in &self.edges {
                let reaches = match e.to {
                    Target::End => true,
                    Target::Agent(b) => ends[b],
                };
                if reaches && !ends[e.from] {
                    ends[e.from] = true;
                    changed = true;
                }
            }
        }
        ends
    }

    /// Every edge that closes a cycle of unbounded edges (a back edge of a
    /// depth-first search over the unbounded edges), with the cycle's path.
    /// Empty exactly when the graph without its bounded edges is acyclic.
    pub fn unbounded_cycles(&self) -> Vec<Cycle> {
        #[derive(Clone, Copy, PartialEq)]
        enum Mark {
            New,
            OnStack,
            Done,
        }
        let mut mark = vec![Mark::New; self.agents];
        let mut cycles = Vec::new();
        for root in 0..self.agents {
            if mark[root] != Mark::New {
                continue;
            }
            // Iterative DFS: (agent, edges of it still to visit).
            let mut path: Vec<usize> = vec![root];
            let mut pending: Vec<Vec<(usize, usize)>> = vec![self.agent_edges(root)];
            mark[root] = Mark::OnStack;
            while let Some(todo) = pending.last_mut() {
                match todo.pop() {
                    Some((edge, b)) => match mark[b] {
                        Mark::New => {
                            mark[b] = Mark::OnStack;
                            path.push(b);
                            pending.push(self.agent_edges(b));
                        }
                        Mark::OnStack => {
                            let start = path.iter().rposition(|&a| a == b).unwrap_or(0);
                            let mut cycle: Vec<usize> = path[start..].to_vec();
                            cycle.push(b);
                            cycles.push(Cycle {
                                closing_edge: edge,
                                path: cycle,
                            });
                        }
                        Mark::Done => {}
                    },
                    None => {
                        pending.pop();
                        if let Some(a) = path.pop() {
                            mark[a] = Mark::Done;
                        }
                    }
                }
            }
        }
        cycles.sort_by_key(|c| c.closing_edge);
        cycles
    }

    /// Unbounded agent-to-agent edges of `a` as `(edge, to)`, reversed so
    /// that popping visits them in declaration order.
    fn agent_edges(&self, a: usize) -> Vec<(usize, usize)> {
        let mut v: Vec<(usize, usize)> = self
            .successors(a, false)
            .filter_map(|(i, e)| match e.to {
                Target::Agent(b) => Some((i, b)),
                Target::End => None,
            })
            .collect();
        v.reverse();
        v
    }

    /// The most agent turns any run can take, or `None` when a cycle of
    /// unbounded edges makes runs unbounded: the longest walk from the
    /// entry, counted in agents, that takes no bounded edge more often than
    /// its bound (a run may be stopped anywhere, so the walk need not end
    /// at `END`).
    ///
    /// Exact by a memoized search over (agent, uses of each bounded edge),
    /// which ends because every cycle takes a bounded edge. When that state
    /// space is larger than [`EXACT_SEARCH_STATES`] (many loops with large
    /// bounds), it falls back to [`upper_bound_on_hops`](Self::upper_bound_on_hops),
    /// never lower than the exact value.
    pub fn max_hops(&self) -> Option<u64> {
        if !self.unbounded_cycles().is_empty() {
            return None;
        }
        let upper = self.upper_bound_on_hops();
        Some(self.longest_walk().unwrap_or(upper))
    }

    /// An upper bound on the agent turns of any run (without an unbounded
    /// cycle). Cut a run's walk at each bounded edge it takes: there are at
    /// most `B + 1` pieces (`B`, the sum of all bounds), each a path in the
    /// acyclic graph of unbounded edges, so at most `L` turns long (`L`, the
    /// longest such path counted in agents). Hence `(B + 1) * L`.
    pub fn upper_bound_on_hops(&self) -> u64 {
        let order = self.topological_order();
        // longest[a]: agents on the longest unbounded path starting at a.
        let mut longest = vec![1u64; self.agents];
        for &a in order.iter().rev() {
            for (_, e) in self.successors(a, false) {
                if let Target::Agent(b) = e.to {
                    longest[a] = longest[a].max(1 + longest[b]);
                }
            }
        }
        let l = longest.iter().copied().max().unwrap_or(0);
        let b: u64 = self
            .edges
            .iter()
            .filter_map(|e| e.bound.map(u64::from))
            .sum();
        l.saturating_mul(b.saturating_add(1))
    }

    /// The longest walk from the entry (see [`max_hops`](Self::max_hops)),
    /// or `None` when its search would visit more than
    /// [`EXACT_SEARCH_STATES`] states. Only called without unbounded cycles.
    fn longest_walk(&self) -> Option<u64> {
        if self.entry >= self.agents {
            return Some(0);
        }
        // The bounded edges to agents: their index among them, by edge.
        let bounded: Vec<Option<usize>> = {
            let mut next = 0;
            self.edges
                .iter()
                .map(|e| match (e.bound, e.to) {
                    (Some(_), Target::Agent(_)) => {
                        next += 1;
                        Some(next - 1)
                    }
                    _ => None,
                })
                .collect()
        };
        let states = self
            .edges
            .iter()
            .filter(|e| matches!(e.to, Target::Agent(_)))
            .filter_map(|e| e.bound)
            .try_fold(self.agents as u64, |n, b| n.checked_mul(u64::from(b) + 1))?;
        if states > EXACT_SEARCH_STATES {
            return None;
        }
        // Post-order over the search tree with an explicit stack, so a long
        // walk (a loop bound of thousands) cannot overflow the stack.
        type State = (usize, Vec<u32>);
        let mut memo: std::collections::HashMap<State, u64> = std::collections::HashMap::new();
        let start: State = (self.entry, vec![0; bounded.iter().flatten().count()]);
        let mut stack: Vec<(State, bool)> = vec![(start.clone(), false)];
        let bounded = &bounded;
        let next_states = |(at, uses): &State| -> Vec<State> {
            let mut out = Vec::new();
            for (i, e) in self.edges.iter().enumerate() {
                let Target::Agent(b) = e.to else { continue };
                if e.from != *at {
                    continue;
                }
                let mut uses = uses.clone();
                if let (Some(k), Some(limit)) = (bounded[i], e.bound) {
                    if uses[k] >= limit {
                        continue;
                    }
                    uses[k] += 1;
                }
                out.push((b, uses));
            }
            out
        };
        while let Some((state, expanded)) = stack.pop() {
            if memo.contains_key(&state) {
                continue;
            }
            if expanded {
                let best = next_states(&state)
                    .iter()
                    .map(|n| memo.get(n).copied().unwrap_or(0))
                    .max()
                    .unwrap_or(0);
                memo.insert(state, 1 + best);
            } else {
                let todo: Vec<State> = next_states(&state)
                    .into_iter()
                    .filter(|n| !memo.contains_key(n))
                    .collect();
                stack.push((state, true));
                stack.extend(todo.into_iter().map(|n| (n, false)));
            }
        }
        memo.get(&start).copied()
    }

    /// The agents of a shortest run that reaches the end, in order: a
    /// shortest path from the entry to an agent with an edge to `END` (its
    /// length is the fewest agent turns any run takes; the transfer to `END`
    /// is not a turn). `None` when no run can end. Loop bounds do not
    /// matter: a shortest path repeats no edge, and every bound is at least 1.
    pub fn shortest_run(&self) -> Option<Vec<usize>> {
        if self.entry >= self.agents {
            return None;
        }
        // Breadth-first over all edges, in declaration order; the first
        // agent found with an edge to `END` ends a shortest run.
        let mut parent: Vec<Option<usize>> = vec![None; self.agents];
        let mut seen = vec![false; self.agents];
        seen[self.entry] = true;
        let mut queue = std::collections::VecDeque::from([self.entry]);
        while let Some(a) = queue.pop_front() {
            if self.successors(a, true).any(|(_, e)| e.to == Target::End) {
                let (mut path, mut at) = (vec![a], a);
                while let Some(p) = parent[at] {
                    path.push(p);
                    at = p;
                }
                path.reverse();
                return Some(path);
            }
            for (_, e) in self.successors(a, true) {
                if let Target::Agent(b) = e.to
                    && !seen[b]
                {
                    seen[b] = true;
                    parent[b] = Some(a);
                    queue.push_back(b);
                }
            }
        }
        None
    }

    /// A topological order of the agents over unbounded edges (only valid
    /// when there is no unbounded cycle).
    fn topological_order(&self) -> Vec<usize> {
        let mut indegree = vec![0usize; self.agents];
        for e in self.edges.iter().filter(|e| e.bound.is_none()) {
            if let Target::Agent(b) = e.to {
                indegree[b] += 1;
            }
        }
        let mut ready: Vec<usize> = (0..self.agents).filter(|&a| indegree[a] == 0).collect();
        let mut order = Vec::with_capacity(self.agents);
        while let Some(a) = ready.pop() {
            order.push(a);
            for (_, e) in self.successors(a, false) {
                if let Target::Agent(b) = e.to {
                    indegree[b] -= 1;
                    if indegree[b] == 0 {
                        ready.push(b);
                    }
                }
            }
        }
        order
    }
}

#[cfg(test)]
#[path = "graph_tests.rs"]
mod tests;
