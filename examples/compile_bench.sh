#!/usr/bin/env bash
# Compile-time benchmark (issue 18, item 2): `cargo check` of the same
# 50-agent, 200-edge workflow written with the macros, by hand against the
# traits, and as a plain enum-and-match program (examples/gen_compile_bench.rs).
#
# Dependencies are checked once (warm-up); then each crate alone is measured:
# touch its lib.rs, `cargo check -p` it, REPS times (default 3), median.
#
# Run from anywhere: examples/compile_bench.sh [REPS]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
reps="${1:-3}"
out="$root/target/compile-bench"
mkdir -p "$out"
rustc --edition 2024 -O "$root/examples/gen_compile_bench.rs" -o "$out/gen"
"$out/gen" "$out" "$root"
cp "$root/Cargo.lock" "$out/Cargo.lock"
export CARGO_TARGET_DIR="$out/target"
export CARGO_PROFILE_DEV_DEBUG="${CARGO_PROFILE_DEV_DEBUG:-line-tables-only}"
cd "$out"
echo "warm-up (dependencies and each crate once)..."
cargo check --offline -q -p bench_macro -p bench_hand -p bench_plain

now() { date +%s.%N; }
declare -A med spread
for c in macro hand plain; do
  times=()
  for _ in $(seq "$reps"); do
    touch "$c/src/lib.rs"
    t0=$(now)
    cargo check --offline -q -p "bench_$c"
    t1=$(now)
    times+=("$(echo "$t1 - $t0" | bc -l)")
  done
  sorted=($(printf '%s\n' "${times[@]}" | sort -g))
  med[$c]=${sorted[$(( ${#sorted[@]} / 2 ))]}
  spread[$c]="${sorted[0]}..${sorted[-1]}"
  printf '%-6s median %.2fs (runs: %s)\n' "$c" "${med[$c]}" "$(printf '%.2f ' "${times[@]}")"
done
printf 'macro/hand  = %.2fx\n' "$(echo "${med[macro]} / ${med[hand]}" | bc -l)"
printf 'macro/plain = %.2fx\n' "$(echo "${med[macro]} / ${med[plain]}" | bc -l)"
printf 'hand/plain  = %.2fx\n' "$(echo "${med[hand]} / ${med[plain]}" | bc -l)"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
