#!/usr/bin/env bash
# Instructions per transition of the reference workload, counted with
# callgrind (issue 18; the method of the book's performance chapter): the
# release build of `bench_loop` (one codegen unit, fat LTO) run at N = 200
# and N = 400 runs of 10 rounds, each program total minus the clock's
# one-off calibration (`quanta::Clock::new`, inclusive, which varies from
# process to process), the difference divided by the 4,620 transitions the
# extra 200 runs add. The counts do not depend on the machine's load.
#
#   examples/count_transition.sh            instructions per transition
#   examples/count_transition.sh profile    and the 30 costliest functions
#                                           (self cost per transition)
#   examples/count_transition.sh locks      and the locked instructions
#                                           (`lock`-prefixed or `xchg`) of
#                                           the binary executed per
#                                           transition, by function
#
# Needs valgrind, objdump and python3; a few minutes (the build, then two
# runs under callgrind, about 20 s each).
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-}"
for tool in valgrind python3 objdump; do
  command -v "$tool" >/dev/null || { echo "count_transition.sh needs $tool" >&2; exit 2; }
done
cargo build -q --release -p examples --example bench_loop
bin=target/release/examples/bench_loop
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
extra=()
[ "$mode" = locks ] && extra=(--dump-instr=yes)
for n in 200 400; do
  valgrind --tool=callgrind "${extra[@]}" --callgrind-out-file="$dir/cg.$n" "$bin" 10 "$n" >/dev/null 2>&1
done
if [ "$mode" = locks ]; then
  objdump -d --no-show-raw-insn "$bin" | awk '/\t(lock |xchg )/ { sub(":", "", $1); print $1 }' >"$dir/locks"
fi
python3 - "$dir" "$mode" <<'PY'
import collections, re, subprocess, sys

d, mode = sys.argv[1], sys.argv[2]
TRANSITIONS = 4620  # what 200 more runs of 10 rounds add

def functions(path, inclusive):
    args = ["callgrind_annotate", "--threshold=100", path]
    if inclusive:
        args.insert(1, "--inclusive=yes")
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    costs = collections.Counter()
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\([^)]*\)\s+(.*)$", line)
        if m:
            name = re.sub(r"\s*\[.*\]$", "", m.group(2))
            costs[name] += int(m.group(1).replace(",", ""))
    return costs

def total(path):
    inc = functions(path, True)
    clock = next((v for k, v in inc.items() if "quanta::Clock::new" in k), 0)
    return inc["PROGRAM TOTALS"] - clock

a, b = total(f"{d}/cg.200"), total(f"{d}/cg.400")
print(f"instructions per transition: {(b - a) / TRANSITIONS:.0f}")

if mode == "profile":
    sa, sb = functions(f"{d}/cg.200", False), functions(f"{d}/cg.400", False)
    rows = sorted(((sb[k] - sa[k]) / TRANSITIONS, k) for k in set(sa) | set(sb)
                  if "PROGRAM TOTALS" not in k and "quanta" not in k and "clock_gettime" not in k
                  # the calibration's lazy statics (under `Clock::new`)
                  and "OnceCell<T>::initialize" not in k)
    print("self cost per transition (the clock's calibration left out):")
    for v, k in reversed(rows[-30:]):
        print(f"  {v:7.1f}  {k[:150]}")

if mode == "locks":
    locks = {int(x, 16) for x in open(f"{d}/locks")}
    def executed(path):
        names, fn, last, in_call = {}, None, 0, False
        counts = collections.Counter()
        for line in open(path):
            m = re.match(r"(c?fn)=\((\d+)\)(?: (.*))?$", line.strip())
            if m:
                if m.group(3):
                    names[m.group(2)] = m.group(3)
                if m.group(1) == "fn":
                    fn = names.get(m.group(2))
                continue
            if line.startswith("calls="):
                in_call = True
                continue
            m = re.match(r"^(0x[0-9a-f]+|[+-]\d+|\*)\s+\S+\s+(\d+)", line)
            if not m:
                continue
            pos = m.group(1)
            last = int(pos, 16) if pos.startswith("0x") else last if pos == "*" else last + int(pos)
            if in_call:  # the call's inclusive cost, not an instruction's
                in_call = False
                continue
            if last in locks:
                counts[fn] += int(m.group(2))
        return counts
    ca, cb = executed(f"{d}/cg.200"), executed(f"{d}/cg.400")
    per = {k: (cb[k] - ca[k]) / TRANSITIONS for k in set(ca) | set(cb)}
    print(f"locked instructions per transition (the binary's, not libc's): {sum(per.values()):.1f}")
    for k, v in sorted(per.items(), key=lambda kv: -kv[1])[:10]:
        if v >= 0.05:
            print(f"  {v:5.2f}  {(k or '?')[:150]}")
PY
