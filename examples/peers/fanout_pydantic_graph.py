"""Peer baseline for the fan-out workload (issue 13): pydantic-graph's
builder API (`GraphBuilder`: `map` fork, `join` with a reducer, `decision`).

Workload (the same in every implementation, ours included):
  dispatcher -> WIDTH branches in parallel -> join, ROUNDS times, then END.
  Each branch returns one view (its index and a verdict); the join receives
  every view and checks that none is missing. One round = 1 dispatch, WIDTH
  branch turns and 1 join.

Usage: python fanout_pydantic_graph.py WIDTH ROUNDS RUNS [SLEEP_MS]
  SLEEP_MS > 0: each branch awaits asyncio.sleep(SLEEP_MS), to show whether
  branches overlap (about SLEEP_MS a round when they do).
Prints one line:
  `pydantic-graph-fanout-W: <branches> branch turns in <s>s = <us> us/branch, <ms> ms/round`.
"""
import asyncio
import sys
import time
from dataclasses import dataclass

from pydantic_graph import GraphBuilder, StepContext, reduce_list_append


@dataclass
class State:
    width: int
    rounds: int
    sleep_ms: int
    round: int = 0


@dataclass
class Again:
    pass


@dataclass
class Done:
    round: int


def build():
    g = GraphBuilder(state_type=State, output_type=int)

    @g.step
    async def dispatch(ctx: StepContext[State, None, object]) -> list[int]:
        ctx.state.round += 1
        return list(range(ctx.state.width))

    @g.step
    async def branch(ctx: StepContext[State, None, int]) -> dict:
        if ctx.state.sleep_ms:
            await asyncio.sleep(ctx.state.sleep_ms / 1000)
        return {"branch": ctx.inputs, "verdict": "approve" if ctx.inputs % 2 else "revise"}

    views = g.join(reduce_list_append, initial_factory=list)

    @g.step
    async def judge(ctx: StepContext[State, None, list]) -> Again | Done:
        assert len(ctx.inputs) == ctx.state.width, "a view is missing at the join"
        return Done(ctx.state.round) if ctx.state.round == ctx.state.rounds else Again()

    @g.step
    async def finish(ctx: StepContext[State, None, Done]) -> int:
        return ctx.inputs.round

    g.add(
        g.edge_from(g.start_node).to(dispatch),
        g.edge_from(dispatch).map().to(branch),
        g.edge_from(branch).to(views),
        g.edge_from(views).to(judge),
        g.edge_from(judge).to(
            g.decision()
            .branch(g.match(Again).to(dispatch))
            .branch(g.match(Done).to(finish))
        ),
        g.edge_from(finish).to(g.end_node),
    )
    return g.build()


async def main():
    width, rounds, runs = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    sleep_ms = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    graph = build()
    t = time.perf_counter()
    for _ in range(runs):
        out = await graph.run(state=State(width=width, rounds=rounds, sleep_ms=sleep_ms))
        assert out == rounds
    dt = time.perf_counter() - t
    branches = runs * rounds * width
    print(
        f"pydantic-graph-fanout-{width}: {branches} branch turns in {dt:.3f}s = "
        f"{dt / branches * 1e6:.2f} us/branch, {dt / (runs * rounds) * 1e3:.3f} ms/round"
    )


if __name__ == "__main__":
    asyncio.run(main())
