#!/usr/bin/env python3
"""Predicted against measured latencies of one workload at one load.

    calibrate-compare.py RUN_DIR PLAN.json BOUND METRIC...

RUN_DIR is a live `arbor run` directory (records.jsonl), PLAN.json the
`arbor plan --json --service server:PROFILE.toml` of the same workload and
flags. Prints p50/p90 of TTFT (sent to first content), ITL ((done - first)
/ (output tokens - 1), one value a request, as the plan's) and E2E (sent to
done) over the measured requests (ok, not warmups), and the error of each
prediction. Exits 1 when a METRIC (e.g. `ttft_p50`) is off by more than
BOUND (a fraction: 0.10 is 10 %). Used by calibrate-emulator.sh and
calibrate-llama.sh (docs/capacity.md).
"""
import json
import math
import sys


def rank(values, p):
    """Nearest-rank percentile (as arbor's)."""
    values = sorted(values)
    return values[max(0, math.ceil(p * len(values)) - 1)]


def measured(run_dir):
    out = {"ttft": [], "itl": [], "e2e": []}
    with open(f"{run_dir}/records.jsonl") as f:
        for line in f:
            r = json.loads(line)
            if r.get("status") != "ok" or r.get("warmup"):
                continue
            sent, first, done = r["sent_s"], r["first_content_s"], r["done_s"]
            if first is None or done is None:
                continue
            out["ttft"].append(first - sent)
            out["e2e"].append(done - sent)
            if r["output_tokens"] >= 2:
                out["itl"].append((done - first) / (r["output_tokens"] - 1))
    return out


def predicted(plan_json):
    with open(plan_json) as f:
        turns = json.load(f)["server"]["turns"]
    out = {"ttft": [], "itl": [], "e2e": []}
    for t in turns:
        if t["warmup"]:
            continue
        out["ttft"].append(t["ttft_s"])
        out["e2e"].append(t["e2e_s"])
        if t["osl"] >= 2 and t["itl_s"] is not None:
            out["itl"].append(t["itl_s"])
    return out


def main():
    run_dir, plan_json, bound = sys.argv[1], sys.argv[2], float(sys.argv[3])
    checked = set(sys.argv[4:])
    live, plan = measured(run_dir), predicted(plan_json)
    print(f"requests: {len(live['ttft'])} measured, {len(plan['ttft'])} predicted")
    print(f"{'metric':<10} {'measured ms':>12} {'predicted ms':>13} {'error':>8}")
    ok = True
    for metric in ("ttft", "itl", "e2e"):
        for p in (50, 90):
            name = f"{metric}_p{p}"
            want = rank(live[metric], p / 100) * 1e3
            got = rank(plan[metric], p / 100) * 1e3
            error = (got - want) / want if want else float("inf")
            miss = name in checked and abs(error) > bound
            ok &= not miss
            mark = "  MISS" if miss else ""
            print(f"{name:<10} {want:12.2f} {got:13.2f} {error * 100:+7.1f}%{mark}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
