#!/usr/bin/env bash
# Compile-time benchmark (issue 18, item 2): `cargo check` of the same
# 50-agent, 200-edge workflow written with the macros, by hand against the
# traits, and as a plain enum-and-match program (examples/gen_compile_bench.rs).
#
# Dependencies are checked once (warm-up); then each crate alone is measured:
# touch its lib.rs, `cargo check -p` it; REPS rounds (default 3) of the
# three crates in turn, median per crate. Then the expanded sizes.
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

# Rounds of one check per crate, in turn: a change in the machine's load
# (other builds) falls on all three crates alike, not on one of them. Each
# check is timed twice: wall clock, and CPU time (user + system, of cargo
# and rustc), which other builds on the machine disturb much less.
TIMEFORMAT='%R %U %S'
declare -A wall cpu
for _ in $(seq "$reps"); do
  for c in macro hand plain; do
    touch "$c/src/lib.rs"
    { time cargo check --offline -q -p "bench_$c" 2>"$out/check.log"; } 2>"$out/time.txt" ||
      { cat "$out/check.log"; exit 1; }
    read -r r u s <"$out/time.txt"
    wall[$c]+="$r "
    cpu[$c]+="$(echo "$u + $s" | bc -l) "
  done
done
median() { printf '%s\n' $1 | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
declare -A mw mc
for c in macro hand plain; do
  mw[$c]=$(median "${wall[$c]}")
  mc[$c]=$(median "${cpu[$c]}")
  printf '%-6s wall median %.2fs (runs: %s)  cpu median %.2fs (runs: %s)\n' "$c" "${mw[$c]}" \
    "$(printf '%.2f ' ${wall[$c]})" "${mc[$c]}" "$(printf '%.2f ' ${cpu[$c]})"
done
ratios() {
  printf '%-4s macro/hand = %.2fx  macro/plain = %.2fx  hand/plain = %.2fx\n' "$1" \
    "$(echo "$2 / $3" | bc -l)" "$(echo "$2 / $4" | bc -l)" "$(echo "$3 / $4" | bc -l)"
}
ratios wall "${mw[macro]}" "${mw[hand]}" "${mw[plain]}"
ratios cpu "${mc[macro]}" "${mc[hand]}" "${mc[plain]}"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"

# What each crate expands to, which does not depend on the load: lines of
# the expanded crate, `impl` blocks, and serde's impls among them
# (`Serialize`, `Deserialize`, `Visitor`). `-Zunpretty` is unstable; with
# RUSTC_BOOTSTRAP the stable compiler does it, in a target directory of its
# own (build scripts such as proc-macro2's watch that variable: in the
# timed one, it would have every dependency checked again next time).
for c in macro hand plain; do
  CARGO_TARGET_DIR="$out/target-expand" RUSTC_BOOTSTRAP=1 cargo rustc --offline -q -p "bench_$c" --profile=check -- -Zunpretty=expanded >"$out/$c.expanded.rs"
  lines=$(wc -l <"$out/$c.expanded.rs")
  impls=$(grep -cE '^\s*impl\b' "$out/$c.expanded.rs" || true)
  serde=$(grep -cE '^\s*impl\b.*serde::(Serialize|Deserialize|de::Visitor)' "$out/$c.expanded.rs" || true)
  printf '%-6s expands to %6d lines, %5d impl blocks, %4d of them serde'"'"'s\n' "$c" "$lines" "$impls" "$serde"
done
