"""Peer baseline for the fan-out workload (issue 13): LangGraph with `Send`.

Workload (the same in every implementation, ours included):
  dispatcher -> WIDTH branches in parallel -> join, ROUNDS times, then END.
  Each branch returns one view (its index and a verdict); the join receives
  every view and checks that none is missing. One round = 1 dispatch, WIDTH
  branch turns and 1 join.

Usage: python fanout_langgraph.py WIDTH ROUNDS RUNS [SLEEP_MS]
  SLEEP_MS > 0: each branch awaits asyncio.sleep(SLEEP_MS) (run with
  `ainvoke`), to show whether branches overlap: a round then takes about
  SLEEP_MS when they do, WIDTH * SLEEP_MS when they are serialised.
Prints one line:
  `langgraph-fanout-W: <branches> branch turns in <s>s = <us> us/branch, <ms> ms/round`.
"""
import asyncio
import sys
import time
from typing import Annotated, TypedDict

from langgraph.graph import END, StateGraph
from langgraph.types import Send


def keep_views(old, new):
    # The dispatcher clears the views of the previous round (None); each
    # branch adds its own.
    if new is None:
        return []
    return old + new


class S(TypedDict):
    width: int
    rounds: int
    round: int
    sleep_ms: int
    views: Annotated[list, keep_views]


def dispatch(s: S):
    return {"round": s["round"] + 1, "views": None}


def fan_out(s: S):
    return [
        Send("branch", {"index": i, "round": s["round"], "sleep_ms": s["sleep_ms"]})
        for i in range(s["width"])
    ]


def branch(b: dict):
    return {"views": [{"branch": b["index"], "verdict": "approve" if b["index"] % 2 else "revise"}]}


async def branch_sleeping(b: dict):
    await asyncio.sleep(b["sleep_ms"] / 1000)
    return branch(b)


def join(s: S):
    assert len(s["views"]) == s["width"], "a view is missing at the join"
    return {}


def again(s: S):
    return END if s["round"] == s["rounds"] else "dispatch"


def build(sleeping: bool):
    g = StateGraph(S)
    g.add_node("dispatch", dispatch)
    g.add_node("branch", branch_sleeping if sleeping else branch)
    g.add_node("join", join)
    g.set_entry_point("dispatch")
    g.add_conditional_edges("dispatch", fan_out, ["branch"])
    g.add_edge("branch", "join")
    g.add_conditional_edges("join", again)
    return g.compile()


def main():
    width, rounds, runs = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    sleep_ms = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    app = build(sleep_ms > 0)
    cfg = {"recursion_limit": 10**9}
    start = {"width": width, "rounds": rounds, "round": 0, "sleep_ms": sleep_ms, "views": []}
    t = time.perf_counter()
    for _ in range(runs):
        if sleep_ms > 0:
            out = asyncio.run(app.ainvoke(start, cfg))
        else:
            out = app.invoke(start, cfg)
        assert out["round"] == rounds and len(out["views"]) == width
    dt = time.perf_counter() - t
    branches = runs * rounds * width
    print(
        f"langgraph-fanout-{width}: {branches} branch turns in {dt:.3f}s = "
        f"{dt / branches * 1e6:.2f} us/branch, {dt / (runs * rounds) * 1e3:.3f} ms/round"
    )


if __name__ == "__main__":
    main()
