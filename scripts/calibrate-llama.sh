#!/usr/bin/env bash
# Calibration against a real server (docs/capacity.md, "A real server"):
# llama.cpp's C++ llama-server (scripts/llama-server/start-cpp.sh, installed
# by setup-cpp.sh) with SmolLM2-135M, $PARALLEL slots (default 4) and a
# $N_CTX-token KV cache (default 8192), on this CPU.
#
#   scripts/calibrate-llama.sh [calibrate|knee|all] [OUT_DIR]
#
# calibrate (the default): one workload at three loads, `arbor calibrate`
#   (max_num_seqs = PARALLEL, max_num_batched_tokens = llama.cpp's logical
#   batch, 2048; block_size 16 and num_gpu_blocks = N_CTX / 16: llama.cpp's
#   /metrics has no cache_config_info), then another workload at another
#   load, live, against `arbor plan --service server:OUT/fitted.toml` of it:
#   p50/p90 of TTFT, ITL and E2E. About 6 minutes.
# knee: `arbor capacity` of the other workload on the virtual clock under
#   OUT/fitted.toml (from calibrate), then live against the server from that
#   prediction, with the same SLO ($SLO). About 3 minutes.
#
# The server and the client run boosted (scripts/llama-server/boost.sh: a
# session of their own at nice -10; the machine's 2 cores may be busy with
# other work), the server on 127.0.0.1:$PORT (default 18082); it is stopped
# on exit (its PID).
# ARBOR names the binary (default target/release/arbor, built if missing).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=llama-server/boost.sh
. "$here/llama-server/boost.sh"
# shellcheck source=llama-server/serve.sh
. "$here/llama-server/serve.sh"
root=$(cd "$here/.." && pwd)
mode=${1:-calibrate}
out=${2:-$(mktemp -d)/calibrate-llama}
case $mode in calibrate | knee | all) ;; *) echo "usage: $0 [calibrate|knee|all] [OUT_DIR]" >&2; exit 2 ;; esac
arbor=${ARBOR:-$root/target/release/arbor}
[ -x "$arbor" ] || cargo build --release -q -p arbor-cli --manifest-path "$root/Cargo.toml"
export LLAMA_CPP_DIR=${LLAMA_CPP_DIR:-$HOME/.cache/arbor-llama-cpp}
if [ ! -e "$LLAMA_CPP_DIR/SmolLM2-135M-Instruct.Q4_1.gguf" ]; then
  echo "no llama-server in $LLAMA_CPP_DIR: run scripts/llama-server/setup-cpp.sh first" >&2
  exit 2
fi
port=${PORT:-18082}
parallel=${PARALLEL:-4}
n_ctx=${N_CTX:-8192}
slo=${SLO:-ttft_p90<=2.5s}
url=http://127.0.0.1:$port
mkdir -p "$out"

serve_llama "$port" "$parallel" "$n_ctx" "$out/server.log"

# What every run sends: the exact tokenizer (planned prompt tokens match the
# server's), the EOS token banned (outputs as planned), no gaps between
# turns, the server's /metrics scraped, and a cache-bust marker per play:
# without it the synthetic first turns of different trees reach the server
# as nearly the same text (474 of 480 tokens cached), while the plan's
# prefix keys keep trees apart (docs/capacity.md, "A real server"). Each run
# takes its own --cache-bust-salt: llama-server keeps earlier prompts (every
# slot's last one, and up to 8 GiB more in host RAM), so a run replaying
# another's plays at the same seed and salt would find its first turns
# cached (docs/run.md, "Cache-bust markers").
server=(--endpoint "$url" --model smollm2-135m --api chat --cache-bust
  --extra-body '{"logit_bias": {"2": -100}}' --timeout 120
  --metrics-url "$url/metrics" --metrics-interval 500ms)
shape=(--tokenizer "$root/testdata/tokenizers/smollm2-135m/tokenizer.json"
  --tool-time zero --think-time-pct 0 --other-time zero --spawn-time zero --join-time zero)
# Calibration: conversations of growing prompts (about 250 tokens, 60 more a
# turn, up to 700), about 24 output tokens.
cal="trees=200,turns=5,depth=0,isl=250,isl_growth=60,max_isl=700,osl=24,seed=11"
# The other workload: longer first prompts and answers, fewer turns.
other="trees=200,turns=3,depth=0,isl=450,isl_growth=40,max_isl=900,osl=40,seed=23"
other_load=3
limits=(--max-num-seqs "$parallel" --max-num-batched-tokens 2048
  --block-size 16 --num-gpu-blocks $((n_ctx / 16)))

status=0
if [ "$mode" != knee ]; then
  # A warm-up request, so the first measured one does not pay for loading.
  curl -sf "$url/v1/chat/completions" -H 'content-type: application/json' \
    -d '{"model":"smollm2-135m","messages":[{"role":"user","content":"hi"}],"max_tokens":4}' >/dev/null
  for s in 1 2 5; do
    boosted "$arbor" run --synthetic "$cal" "${shape[@]}" --sessions "$s" --loop \
      --duration 60 "${server[@]}" --cache-bust-salt "$s" --out "$out/load-$s" --no-progress >/dev/null
  done
  boosted "$arbor" calibrate "$out"/load-1 "$out"/load-2 "$out"/load-5 "${limits[@]}" \
    -o "$out/fitted.toml" | tee "$out/calibrate.txt"
  boosted "$arbor" run --synthetic "$other" "${shape[@]}" --sessions $other_load \
    --loop --duration 120 "${server[@]}" --cache-bust-salt 100 --out "$out/other-$other_load" \
    --no-progress >/dev/null
  # The plan of what the live run sent: the same workload, sessions, and
  # duration (the plan's --loop --duration cut the same way).
  "$arbor" plan --synthetic "$other" "${shape[@]}" --sessions $other_load --loop --duration 120 \
    --service "server:$out/fitted.toml" --json >"$out/plan-other.json"
  echo "the other workload at $other_load sessions: the fitted profile's plan against the live server"
  python3 "$here/calibrate-compare.py" "$out/other-$other_load" "$out/plan-other.json" 0.15 \
    ttft_p50 itl_p50 e2e_p50 || status=1
fi

if [ "$mode" != calibrate ]; then
  [ -e "$out/fitted.toml" ] || { echo "no $out/fitted.toml: run the calibrate mode first" >&2; exit 2; }
  rm -rf "$out/knee-virtual" "$out/knee-live"
  boosted "$arbor" capacity --synthetic "$other" "${shape[@]}" --sessions 1 --loop --duration 30 \
    --service "server:$out/fitted.toml" --slo "$slo" --search sessions:1..8 \
    -o "$out/knee-virtual" | tee "$out/knee-virtual.txt"
  boosted "$arbor" capacity --synthetic "$other" "${shape[@]}" --sessions 1 --loop --duration 30 \
    "${server[@]}" --cache-bust-salt 200 --no-progress --service "server:$out/fitted.toml" --slo "$slo" \
    --search sessions:1..8 -o "$out/knee-live" | tee "$out/knee-live.txt" ||
    # An answer that is only a bound (a probe unresolved on its 95 %
    # interval after its extensions) exits 5 with its table and page.
    [ $? -eq 5 ]
fi
echo "outputs in $out"
exit $status
