#!/usr/bin/env bash
# End-to-end check of arbor's live backend against a real inference server:
# llama.cpp (llama-cpp-python's OpenAI server) with SmolLM2-135M on this CPU.
#
#   scripts/e2e-llama.sh [OUT_DIR]
#
# Installs the server on first use (scripts/llama-server/setup.sh: about 7
# minutes of building on 2 cores, then cached under $LLAMA_DIR, default
# ~/.cache/arbor-llama), starts it on 127.0.0.1:$PORT (default 18080), replays
# a small synthetic workload with subagents, checks records.jsonl and
# summary.json, and stops the server. Exit 0 when every check holds.
#
# The server's quirks, which the run must cope with: it ignores
# max_completion_tokens (so --max-tokens-field max_tokens), ignore_eos (so
# the EOS token is banned with --extra-body logit_bias) and
# stream_options.include_usage (so output tokens are counted from chunks and
# flagged as such); it serves one request at a time.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
out=${1:-$(mktemp -d)/e2e-llama}
port=${PORT:-18080}
export LLAMA_DIR=${LLAMA_DIR:-$HOME/.cache/arbor-llama}
pidfile=$(mktemp)

bash "$here/llama-server/setup.sh" "$LLAMA_DIR" >/dev/null
cargo build --release -q -p arbor-cli --manifest-path "$root/Cargo.toml"
arbor="$root/target/release/arbor"

PORT=$port PIDFILE=$pidfile bash "$here/llama-server/start.sh" >"$out.server.log" 2>&1 &
cleanup() { kill "$(cat "$pidfile" 2>/dev/null)" 2>/dev/null || true; rm -f "$pidfile"; }
trap cleanup EXIT
for _ in $(seq 1 120); do
  curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null 2>&1 && break
  sleep 0.5
done
curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null

# Two trees, three root turns each, one level of subagents; prompts of a few
# hundred tokens and outputs up to 48 tokens keep each request under ~1 s.
"$arbor" run \
  --synthetic "trees=2,turns=3,child_turns=2,depth=1,spawn=0.6,fanout=2,isl=200,isl_growth=40,max_isl=700,osl=16,seed=5" \
  --arrival immediate --tool-time zero --think-time-pct 0 \
  --endpoint "http://127.0.0.1:$port" --model smollm2-135m \
  --max-tokens-field max_tokens --extra-body '{"logit_bias": {"2": -100}}' \
  --timeout 120 --out "$out" --no-progress

python3 "$here/e2e-check.py" "$out" chat llama-cpp-python
