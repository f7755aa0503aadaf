#!/usr/bin/env bash
# Identification against the real-time emulator (docs/capacity.md,
# "Identification"): the built-in emulator serves profiles/example.toml
# (`arbor run --profile`, the batching model paced on the wall clock) at
# three loads of one workload; `arbor calibrate` fits a profile from those
# runs; the fitted coefficients are compared with the known ones, and the
# fitted profile predicts a different workload at a different load
# (`arbor plan --service server:FITTED`), compared with a live emulator run
# of it. Also prints the known profile's own plan of that workload (what
# the model predicts when the coefficients are exact: the floor of the
# error the real-time pacing and the client's stamps leave).
#
#   scripts/calibrate-emulator.sh [OUT_DIR]
#
# The runs are boosted (scripts/llama-server/boost.sh): the emulator paces
# tokens on the wall clock, and a busy machine delays them. About 1.5
# minutes. Exit 0 when the identified coefficients are within 10 % and the
# prediction's p50/p90 TTFT and ITL within 10 %. The emulator's own
# lateness is measured first (a lone request's TTFT less the profile's):
# every client TTFT carries it, so the overhead the records identify is
# the profile's plus it, and that sum is what the fitted overhead is
# checked against (the profile's alone is printed too).
# ARBOR names the binary (default target/release/arbor, built if missing).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=llama-server/boost.sh
. "$here/llama-server/boost.sh"
root=$(cd "$here/.." && pwd)
out=${1:-$(mktemp -d)/calibrate-emulator}
arbor=${ARBOR:-$root/target/release/arbor}
profile=$root/profiles/example.toml
[ -x "$arbor" ] || cargo build --release -q -p arbor-cli --manifest-path "$root/Cargo.toml"
mkdir -p "$out"

# Calibration: conversations of growing prompts (300 tokens, about 150 more
# a turn, up to 3000), about 40 output tokens, no gaps between turns.
cal="trees=300,turns=6,depth=0,isl=300,isl_growth=150,max_isl=3000,osl=40,seed=11"
# The other workload: single-turn sessions of 1200-token prompts and about
# 80 output tokens (no prefix shared: the emulator has no prefix keys yet).
other="trees=160,turns=1,depth=0,isl=1200,osl=80,seed=23"
common=(--tool-time zero --think-time-pct 0 --other-time zero --spawn-time zero --join-time zero)

# The emulator's lateness: single-turn lone requests (one session), the
# median of each request's TTFT less the known profile's plan of it. To a
# client it is overhead: the table shows the profile's sum plus this too.
lone="trees=60,turns=1,depth=0,isl=600,osl=20,seed=5"
boosted "$arbor" run --synthetic "$lone" --profile "$profile" --sessions 1 "${common[@]}" \
  --out "$out/lone" --no-progress >/dev/null
"$arbor" plan --synthetic "$lone" --sessions 1 "${common[@]}" --service "server:$profile" \
  --json >"$out/plan-lone.json"
lateness_ns=$(python3 - "$out/lone/records.jsonl" "$out/plan-lone.json" <<'EOF'
import json, sys
plan = {t["request"]: t["ttft_s"] for t in json.load(open(sys.argv[2]))["server"]["turns"]}
late = sorted(
    (r["first_content_s"] - r["sent_s"] - plan[r["request"]]) * 1e9
    for r in map(json.loads, open(sys.argv[1]))
    if r["status"] == "ok" and not r["warmup"] and r["request"] in plan
)
print(round(late[len(late) // 2]) if late else 0)
EOF
)
echo "the emulator's lateness: a lone request's TTFT is $((lateness_ns / 1000)) us longer than the profile's (median)"

for s in 1 4 12; do
  secs=$((s == 1 ? 12 : 15))
  boosted "$arbor" run --synthetic "$cal" --profile "$profile" --sessions "$s" \
    --loop --duration "$secs" "${common[@]}" --out "$out/load-$s" --no-progress >/dev/null
done
boosted "$arbor" calibrate "$out"/load-1 "$out"/load-4 "$out"/load-12 -o "$out/fitted.toml" \
  --max-num-seqs 16 --max-num-batched-tokens 2048 --block-size 16 --num-gpu-blocks 4096 \
  | tee "$out/calibrate.txt"

status=0
python3 - "$profile" "$out/fitted.toml" "$lateness_ns" <<'EOF' || status=1
import sys, tomllib
known, fitted = (tomllib.load(open(p, "rb")) for p in sys.argv[1:3])
lateness = int(sys.argv[3])
# (key, bound): the coefficients client records identify (docs/capacity.md,
# "What client traces identify"); the others are printed, not checked.
keys = [("constant_ns", 0.10), ("per_seq_ns", None), ("per_token_ns", 0.10),
        ("knee_tokens", 0.10), ("per_token_above_knee_ns", None),
        ("per_decode_context_token_ns", 0.10), ("per_prefill_attention_ns", None)]
ok = True
print("| coefficient | known | fitted | error |\n|---|---:|---:|---:|")
rows = [(k, known["step"].get(k, 0), fitted["step"].get(k, 0), b) for k, b in keys]
over = lambda p: p["overhead"].get("arrival_ns", 0) + p["overhead"].get("departure_ns", 0)
rows.append(("arrival_ns + departure_ns", over(known), over(fitted), None))
rows.append(("arrival_ns + departure_ns + lateness", over(known) + lateness, over(fitted), 0.10))
for name, want, got, bound in rows:
    err = (got - want) / want if want else 0.0
    miss = bound is not None and abs(err) > bound
    ok &= not miss
    print(f"| {name} | {want:g} | {got:.1f} | {err * 100:+.1f} %{' MISS' if miss else ''} |")
sys.exit(0 if ok else 1)
EOF

boosted "$arbor" run --synthetic "$other" --profile "$profile" --sessions 8 \
  "${common[@]}" --out "$out/other-8" --no-progress >/dev/null
for p in fitted known; do
  service=$out/fitted.toml
  [ $p = known ] && service=$profile
  "$arbor" plan --synthetic "$other" --sessions 8 "${common[@]}" \
    --service "server:$service" --json >"$out/plan-$p.json"
done
echo "the other workload, 8 sessions: the known profile's plan against the live emulator"
python3 "$here/calibrate-compare.py" "$out/other-8" "$out/plan-known.json" 1 || true
echo "the other workload, 8 sessions: the fitted profile's plan against the live emulator"
python3 "$here/calibrate-compare.py" "$out/other-8" "$out/plan-fitted.json" 0.10 \
  ttft_p50 ttft_p90 itl_p50 itl_p90 || status=1
echo "outputs in $out"
exit $status
