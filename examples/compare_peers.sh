#!/usr/bin/env bash
# Runs the reference workload (planner -> worker -> reviewer, ROUNDS rounds)
# on this library and on the peers of ../shared/bench in one go, and prints
# each one's time per transition and its ratio to ours; then the two other
# figures of issue 18: the memory per run (examples/bench_memory.rs, 10,000
# runs under a counting allocator) and the compile time of a 50-agent,
# 200-edge workflow (examples/compile_bench.sh 3; COMPARE_COMPILE=0 skips
# it, a few minutes).
#
#   examples/compare_peers.sh [ROUNDS] [RUNS_RUST] [RUNS_PYTHON]
#
# Ours and graph-flow run RUST_ROUNDS times each (5), in turn, pinned to one
# core when taskset is there; each one's median round is compared.
#
# Needs ../shared/bench beside the repo; sets up a throwaway venv in
# /tmp/peers and builds graph-flow in /tmp/peer-graph-flow on first use.
#
#   examples/compare_peers.sh postgres [ROUNDS] [RUNS]
#
# The per-transition commit cost on PostgreSQL: ours (`PostgresLedger`)
# beside LangGraph's PostgreSQL checkpointer (`examples/peers/peer_langgraph.py
# postgres`, its default durability, and `postgres-sync`), both against one
# throwaway cluster started here with fsync on (examples/peers/pg_cluster.sh,
# PostgreSQL from the machine's installation), and both beside their SQLite
# forms. Sets up a throwaway venv in /tmp/peers-pg on first use
# (examples/peers/requirements-postgres.txt).
#
#   examples/compare_peers.sh fanout [WIDTH] [ROUNDS] [RUNS_RUST] [RUNS_PYTHON] [SLEEP_MS]
#
# The fan-out workload (issue 13): a dispatcher, WIDTH branches at once, a
# join that checks no view is missing, ROUNDS rounds. Ours
# (`examples/bench_fanout.rs`) beside LangGraph's `Send` and pydantic-graph's
# fork/join (`examples/peers/fanout_*.py`), cost per branch turn and ratios.
# SLEEP_MS > 0: each branch sleeps, which shows whether branches overlap.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = fanout ]; then
  width=${2:-3}
  rounds=${3:-10}
  runs_rust=${4:-2000}
  runs_py=${5:-50}
  sleep_ms=${6:-0}
  bench=${PEER_BENCH:-../shared/bench}
  if [ ! -x /tmp/peers/bin/python ]; then
    echo "setting up the python peers in /tmp/peers..." >&2
    python3 -m venv /tmp/peers && /tmp/peers/bin/pip install -q -r "$bench/requirements.txt"
  fi
  echo "building ours (release)..." >&2
  cargo build -q --release -p examples --example bench_fanout
  out=$(mktemp)
  trap 'rm -f "$out"' EXIT
  ./target/release/examples/bench_fanout "$width" "$rounds" "$runs_rust" "$sleep_ms" | tee -a "$out"
  /tmp/peers/bin/python examples/peers/fanout_langgraph.py "$width" "$rounds" "$runs_py" "$sleep_ms" | tee -a "$out"
  /tmp/peers/bin/python examples/peers/fanout_pydantic_graph.py "$width" "$rounds" "$runs_py" "$sleep_ms" | tee -a "$out"
  echo
  echo "ratios (peer time per branch turn / ours):"
  awk '
    { for (i = 1; i <= NF; i++) { if ($i ~ /^us\/branch/) us = $(i - 1); if ($i ~ /^ms\/round/) ms = $(i - 1) } name = $0; sub(/:.*/, "", name) }
    NR == 1 { ours = us }
    { printf "  %-28s %10.2f us/branch %9.3f ms/round  %.2fx\n", name, us, ms, us / ours }
  ' "$out"
  exit 0
fi

if [ "${1:-}" = postgres ]; then
  rounds=${2:-10}
  runs=${3:-50}
  if [ ! -x /tmp/peers-pg/bin/python ]; then
    echo "setting up LangGraph with its PostgreSQL checkpointer in /tmp/peers-pg..." >&2
    python3 -m venv /tmp/peers-pg && /tmp/peers-pg/bin/pip install -q -r examples/peers/requirements-postgres.txt
  fi
  echo "building ours (release)..." >&2
  cargo build -q --release -p examples --example bench_loop
  cargo build -q --release -p workflow-postgres --example bench_loop_postgres
  cluster=$(mktemp -d /tmp/compare-pg.XXXXXX)
  trap 'examples/peers/pg_cluster.sh stop "$cluster"' EXIT
  url=$(examples/peers/pg_cluster.sh start "$cluster")
  for db in ours langgraph langgraph_sync; do
    /tmp/peers-pg/bin/python -c "import psycopg, sys; psycopg.connect(sys.argv[1], autocommit=True).execute('CREATE DATABASE $db')" "$url/postgres"
  done
  out=$(mktemp)
  ./target/release/examples/bench_loop_postgres "$rounds" "$runs" "$url/ours" | tee -a "$out"
  ./target/release/examples/bench_loop "$rounds" "$runs" sqlite | tee -a "$out"
  ./target/release/examples/bench_loop "$rounds" "$runs" sqlite-process | tee -a "$out"
  /tmp/peers-pg/bin/python examples/peers/peer_langgraph.py postgres "$rounds" "$runs" "$url/langgraph" | tee -a "$out"
  /tmp/peers-pg/bin/python examples/peers/peer_langgraph.py postgres-sync "$rounds" "$runs" "$url/langgraph_sync" | tee -a "$out"
  /tmp/peers-pg/bin/python examples/peers/peer_langgraph.py sqlite "$rounds" "$runs" | tee -a "$out"
  echo
  echo "durable transitions (time per transition / ours on PostgreSQL):"
  awk '
    { for (i = 1; i <= NF; i++) if ($i == "us/transition") us = $(i - 1); name = $0; sub(/:.*/, "", name) }
    NR == 1 { ours = us }
    { printf "  %-32s %10.2f us  %.2fx\n", name, us, us / ours }
  ' "$out"
  rm -f "$out"
  exit 0
fi
rounds=${1:-10}
runs_rust=${2:-200000}
runs_py=${3:-200}
bench=${PEER_BENCH:-../shared/bench}
out=$(mktemp)

echo "building ours (release)..." >&2
cargo build -q --release -p examples --example bench_loop

# The Rust peer is built with the same release profile as ours (one
# codegen unit, fat LTO: see the workspace Cargo.toml).
if [ ! -f /tmp/peer-graph-flow/.built-with-lto ]; then
  echo "building graph-flow..." >&2
  rm -rf /tmp/peer-graph-flow && cp -r "$bench/peer-graph-flow" /tmp/ && chmod -R u+w /tmp/peer-graph-flow
  (cd /tmp/peer-graph-flow && CARGO_PROFILE_RELEASE_LTO=fat CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1 cargo build -q --release)
  touch /tmp/peer-graph-flow/.built-with-lto
fi

# The two Rust programs take well under a microsecond a transition, where
# one run of either moves with the machine's other work: they run
# RUST_ROUNDS times each (5 by default), one after the other in turn, on
# the same core when `taskset` is there, and each one's median round is
# what is compared. The time per transition is worked out from each
# line's count and seconds (the printed microseconds have two decimals).
pin=()
if command -v taskset >/dev/null && [ "$(nproc)" -gt 1 ]; then
  pin=(taskset -c 1)
fi
rust_rounds=${RUST_ROUNDS:-5}
rust=$(mktemp)
for _ in $(seq "$rust_rounds"); do
  "${pin[@]}" ./target/release/examples/bench_loop "$rounds" "$runs_rust" | tee -a "$rust"
  "${pin[@]}" /tmp/peer-graph-flow/target/release/peer-graph-flow "$rounds" "$runs_rust" | tee -a "$rust"
done
for name in workflow-core graph-flow; do
  grep "^$name: " "$rust" | awk '
    { for (i = 1; i <= NF; i++) if ($i == "transitions") { count = $(i - 1); secs = $(i + 2) }
      sub(/s$/, "", secs); printf "%.6f\n", secs / count * 1e6 }
  ' | sort -g | awk -v name="$name" '
    { us[NR] = $1 }
    END { printf "%s: median of %d rounds = %.4f us/transition\n", name, NR, us[int((NR + 1) / 2)] }
  ' | tee -a "$out"
done
rm -f "$rust"

if [ ! -x /tmp/peers/bin/python ]; then
  echo "setting up the python peers in /tmp/peers..." >&2
  python3 -m venv /tmp/peers && /tmp/peers/bin/pip install -q -r "$bench/requirements.txt"
fi
/tmp/peers/bin/python "$bench/peer_pydantic_graph.py" "$rounds" "$runs_py" | tee -a "$out"
/tmp/peers/bin/python "$bench/peer_langgraph.py" plain "$rounds" "$runs_py" | tee -a "$out"
/tmp/peers/bin/python "$bench/peer_langgraph.py" sqlite "$rounds" "$runs_py" | tee -a "$out"

durable=$(mktemp)
./target/release/examples/bench_loop "$rounds" "$runs_py" sqlite | tee -a "$durable"
./target/release/examples/bench_loop "$rounds" "$runs_py" sqlite-process | tee -a "$durable"
grep '^langgraph-sqlite' "$out" >> "$durable"

echo
echo "ratios (peer time per transition / ours):"
awk '
  { for (i = 1; i <= NF; i++) if ($i == "us/transition") us = $(i - 1); name = $0; sub(/:.*/, "", name) }
  NR == 1 { ours = us; printf "  %-28s %10.4f us  1.00x\n", name, us; next }
  { printf "  %-28s %10.4f us  %.2fx\n", name, us, us / ours }
' "$out"
echo
echo "durable transitions (LangGraph with its SQLite checkpointer / ours with an SQLite ledger):"
awk '
  { for (i = 1; i <= NF; i++) if ($i == "us/transition") us[NR] = $(i - 1); name[NR] = $0; sub(/:.*/, "", name[NR]) }
  END { for (i = 1; i < NR; i++) printf "  %-28s %10.2f us  langgraph-sqlite is %.1fx slower\n", name[i], us[i], us[NR] / us[i] }
' "$durable"
rm -f "$out" "$durable"

echo
echo "memory per run (cargo run --release -p examples --example bench_memory):"
cargo run -q --release -p examples --example bench_memory
if [ "${COMPARE_COMPILE:-1}" != 0 ]; then
  echo
  echo "compile time (examples/compile_bench.sh 3):"
  examples/compile_bench.sh 3
fi
