"""Peer baseline: the reference loop workflow in LangGraph.

Workload (the same in every implementation, ours included):
  planner -> worker -> reviewer, reviewer loops back to worker until `remaining`
  reaches 0, then ends. One run = 1 + 2*ROUNDS transitions. State is a typed model.

The project's copy of shared/bench/peer_langgraph.py, with the PostgreSQL
checkpointer added (`langgraph-checkpoint-postgres`, `psycopg[binary]`).

Usage: python peer_langgraph.py MODE ROUNDS RUNS [DB]
  MODE: plain  (no persistence)
        memory (InMemorySaver checkpointer)
        sqlite (SqliteSaver checkpointer on file DB, durable)
        postgres (PostgresSaver on the database at the URL DB, or
                 $PEER_POSTGRES_URL; LangGraph's default durability,
                 "async": a step's checkpoint is written while the next
                 step runs)
        postgres-sync (the same, durability="sync": each checkpoint is
                 committed before the next step starts, as ours are)
Prints one line: `<name>: <transitions> transitions in <s>s = <us> us/transition`.
"""
import sys, time, os, tempfile
from pydantic import BaseModel
from langgraph.graph import StateGraph, END


class S(BaseModel):
    task_id: str
    remaining: int
    done: int = 0
    approved: bool = False


def planner(s: S):
    return {"remaining": s.remaining}


def worker(s: S):
    return {"remaining": s.remaining - 1, "done": s.done + 1}


def reviewer(s: S):
    return {"approved": s.remaining == 0}


def route(s: S):
    return END if s.approved else "worker"


def build(checkpointer):
    g = StateGraph(S)
    g.add_node("planner", planner)
    g.add_node("worker", worker)
    g.add_node("reviewer", reviewer)
    g.set_entry_point("planner")
    g.add_edge("planner", "worker")
    g.add_edge("worker", "reviewer")
    g.add_conditional_edges("reviewer", route)
    return g.compile(checkpointer=checkpointer)


def main():
    mode, rounds, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    saver = None
    if mode == "memory":
        from langgraph.checkpoint.memory import InMemorySaver
        saver = InMemorySaver()
    elif mode == "sqlite":
        import sqlite3
        from langgraph.checkpoint.sqlite import SqliteSaver
        db = sys.argv[4] if len(sys.argv) > 4 else os.path.join(tempfile.mkdtemp(), "lg.db")
        saver = SqliteSaver(sqlite3.connect(db, check_same_thread=False))
    elif mode in ("postgres", "postgres-sync"):
        from psycopg import Connection
        from psycopg.rows import dict_row
        from langgraph.checkpoint.postgres import PostgresSaver
        url = sys.argv[4] if len(sys.argv) > 4 else os.environ["PEER_POSTGRES_URL"]
        # The settings LangGraph's documentation gives for a connection of
        # its own: autocommit (each write commits), no prepared statements.
        conn = Connection.connect(url, autocommit=True, prepare_threshold=0, row_factory=dict_row)
        saver = PostgresSaver(conn)
        saver.setup()
    durability = {"postgres-sync": "sync"}.get(mode)
    app = build(saver)
    steps = 0
    t = time.perf_counter()
    for i in range(runs):
        cfg = {"recursion_limit": 10**9, "configurable": {"thread_id": str(i)}}
        if durability:
            out = app.invoke(S(task_id=str(i), remaining=rounds), cfg, durability=durability)
        else:
            out = app.invoke(S(task_id=str(i), remaining=rounds), cfg)
        assert out["done"] == rounds
        steps += 1 + 2 * rounds
    dt = time.perf_counter() - t
    print(f"langgraph-{mode}: {steps} transitions in {dt:.3f}s = {dt / steps * 1e6:.2f} us/transition")


if __name__ == "__main__":
    main()
