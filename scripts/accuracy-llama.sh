#!/usr/bin/env bash
# Held-out accuracy against a real server (docs/capacity.md, "Held-out accuracy against
# llama-server"):
# llama.cpp's C++ llama-server (scripts/llama-server/start-cpp.sh, installed
# by setup-cpp.sh) with SmolLM2-135M, $PARALLEL slots (default 4), a
# $N_CTX-token KV cache (default 8192), on this CPU.
#
#   scripts/accuracy-llama.sh [OUT_DIR]
#
# 1. `arbor calibrate --probe`: the designed experiment alone gives
#    OUT/probe.toml.
# 2. Ordinary runs of a third workload (agents without subagents) at two
#    loads give OUT/runs.toml (`arbor calibrate RUN_DIR...`).
# 3. Two agentic workloads with subagents, which neither calibration saw,
#    each live at two loads ($SECONDS_HELD s each), and each planned under
#    both profiles (`arbor plan --service server:P --json`, with intervals):
#    scripts/calibrate-compare.py prints p50/p90 of TTFT, ITL and E2E,
#    measured against predicted, and whether the measured value lies inside
#    the predicted interval.
#
# Exits 1 when a p50 under probe.toml is off by more than 10 %, a p90 by
# more than 20 %, or fewer than 5 of every 6 figures lie in their
# interval. The server and the client run boosted
# (scripts/llama-server/boost.sh); the server listens on 127.0.0.1:$PORT
# (default 18083) and is stopped on exit. About 20 minutes.
# ARBOR names the binary (default target/release/arbor, built if missing).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=llama-server/boost.sh
. "$here/llama-server/boost.sh"
# shellcheck source=llama-server/serve.sh
. "$here/llama-server/serve.sh"
root=$(cd "$here/.." && pwd)
out=${1:-$(mktemp -d)/accuracy-llama}
arbor=${ARBOR:-$root/target/release/arbor}
[ -x "$arbor" ] || cargo build --release -q -p arbor-cli --manifest-path "$root/Cargo.toml"
export LLAMA_CPP_DIR=${LLAMA_CPP_DIR:-$HOME/.cache/arbor-llama-cpp}
if [ ! -e "$LLAMA_CPP_DIR/SmolLM2-135M-Instruct.Q4_1.gguf" ]; then
  echo "no llama-server in $LLAMA_CPP_DIR: run scripts/llama-server/setup-cpp.sh first" >&2
  exit 2
fi
port=${PORT:-18083}
parallel=${PARALLEL:-4}
n_ctx=${N_CTX:-8192}
held=${SECONDS_HELD:-120}
url=http://127.0.0.1:$port
mkdir -p "$out"

serve_llama "$port" "$parallel" "$n_ctx" "$out/server.log"
# A warm-up request, so the first measured one does not pay for loading.
curl -sf "$url/v1/chat/completions" -H 'content-type: application/json' \
  -d '{"model":"smollm2-135m","messages":[{"role":"user","content":"hi"}],"max_tokens":4}' >/dev/null

# What every request sends (as scripts/calibrate-llama.sh): the exact
# tokenizer, the EOS token banned (outputs as planned), a cache-bust marker
# per play and a salt of its own per run.
request=(--endpoint "$url" --model smollm2-135m --api chat
  --extra-body '{"logit_bias": {"2": -100}}')
server=("${request[@]}" --cache-bust --timeout 120)
tokenizer=(--tokenizer "$root/testdata/tokenizers/smollm2-135m/tokenizer.json")
shape=("${tokenizer[@]}"
  --tool-time zero --think-time-pct 0 --other-time zero --spawn-time zero --join-time zero)
limits=(--max-num-seqs "$parallel" --max-num-batched-tokens 2048
  --block-size 16 --num-gpu-blocks $((n_ctx / 16)))

# 1. The designed experiment.
boosted "$arbor" calibrate --probe "${request[@]}" "${tokenizer[@]}" "${limits[@]}" \
  --probe-out "$out/probe-runs" -o "$out/probe.toml" | tee "$out/probe.txt"

# 2. Ordinary runs of another workload: agents without subagents.
cal="trees=200,turns=5,depth=0,isl=250,isl_growth=60,max_isl=700,osl=24,seed=11"
for s in 1 3; do
  boosted "$arbor" run --synthetic "$cal" "${shape[@]}" --sessions "$s" --loop \
    --duration 60 "${server[@]}" --cache-bust-salt "$s" --metrics-url "$url/metrics" \
    --out "$out/cal-$s" --no-progress >/dev/null
done
boosted "$arbor" calibrate "$out/cal-1" "$out/cal-3" "${limits[@]}" -o "$out/runs.toml" |
  tee "$out/runs.txt"

# 3. Held-out agentic workloads with subagents, two loads each.
held_a="trees=300,turns=4,child_turns=3,depth=1,spawn=0.4,fanout=2,background=0,isl=350,isl_growth=50,max_isl=900,osl=30,seed=31"
held_b="trees=300,turns=3,child_turns=2,depth=2,spawn=0.5,fanout=2,background=0.2,isl=500,isl_growth=80,max_isl=1200,osl=20,seed=37"
status=0
salt=100
for w in a:2 a:4 b:1 b:3; do
  name=${w%%:*} sessions=${w##*:}
  spec=held_$name
  spec=${!spec}
  salt=$((salt + 1))
  dir="$out/held-$name-$sessions"
  boosted "$arbor" run --synthetic "$spec" "${shape[@]}" --sessions "$sessions" --loop \
    --duration "$held" "${server[@]}" --cache-bust-salt "$salt" --out "$dir" --no-progress >/dev/null
  for profile in probe runs; do
    "$arbor" plan --synthetic "$spec" "${shape[@]}" --sessions "$sessions" --loop \
      --duration "$held" --service "server:$out/$profile.toml" --json >"$dir/plan-$profile.json"
    echo "workload $name at $sessions sessions, predicted by $profile.toml:"
    if [ "$profile" = probe ]; then
      python3 "$here/calibrate-compare.py" "$dir" "$dir/plan-$profile.json" --p50 0.10 --p90 0.20 \
        --coverage 5/6 | tee "$dir/compare-$profile.txt" || status=1
    else
      python3 "$here/calibrate-compare.py" "$dir" "$dir/plan-$profile.json" --p50 0.10 --p90 0.20 \
        --coverage 5/6 | tee "$dir/compare-$profile.txt" || true
    fi
  done
done
echo "outputs in $out"
exit $status
