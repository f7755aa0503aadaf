#!/usr/bin/env python3
"""Predicted against measured latencies of one workload at one load.

    calibrate-compare.py RUN_DIR PLAN.json BOUND METRIC...
    calibrate-compare.py RUN_DIR PLAN.json --p50 B50 --p90 B90 [--coverage K/N]

RUN_DIR is a live `arbor run` directory (records.jsonl), PLAN.json the
`arbor plan --json --service server:PROFILE.toml` of the same workload and
flags. Prints p50/p90 of TTFT (sent to first content), ITL ((done - first)
/ (output tokens - 1), one value a request, as the plan's) and E2E (sent to
done) over the measured requests (ok, not warmups), and the error of each
prediction. Exits 1 when a METRIC (e.g. `ttft_p50`) is off by more than
BOUND (a fraction: 0.10 is 10 %). The second form checks every p50
against B50 and every p90 against B90, prints the plan's interval of each
figure (`server.intervals`, `arbor plan --intervals`) and whether the
measured value lies in it, and exits 1 also when fewer than K of every N
figures do. Used by calibrate-emulator.sh, calibrate-llama.sh and
accuracy-llama.sh (docs/capacity.md).
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


def interval(plan_json, metric, p):
    """The plan's interval of `metric` pNN in ms, or None."""
    with open(plan_json) as f:
        intervals = json.load(f)["server"].get("intervals") or {}
    one = (intervals.get(metric) or {}).get(f"p{p}")
    if not one:
        return None
    return one["lo_s"] * 1e3, one["hi_s"] * 1e3


def parse(argv):
    """(run_dir, plan_json, {metric_pNN: bound}, coverage (k, n) or None)."""
    run_dir, plan_json, rest = argv[0], argv[1], argv[2:]
    bounds, coverage = {}, None
    if rest and not rest[0].startswith("--"):
        bound = float(rest[0])
        return run_dir, plan_json, {name: bound for name in rest[1:]}, None
    it = iter(rest)
    for flag in it:
        value = next(it)
        if flag in ("--p50", "--p90"):
            for metric in ("ttft", "itl", "e2e"):
                bounds[f"{metric}_{flag[2:]}"] = float(value)
        elif flag == "--coverage":
            k, n = value.split("/")
            coverage = (int(k), int(n))
        else:
            sys.exit(f"calibrate-compare.py: unknown flag {flag}")
    return run_dir, plan_json, bounds, coverage


def main():
    run_dir, plan_json, bounds, coverage = parse(sys.argv[1:])
    live, plan = measured(run_dir), predicted(plan_json)
    print(f"requests: {len(live['ttft'])} measured, {len(plan['ttft'])} predicted")
    print(f"{'metric':<10} {'measured ms':>12} {'predicted ms':>13} {'error':>8}"
          f" {'interval ms':>21}")
    ok = True
    inside = figures = 0
    for metric in ("ttft", "itl", "e2e"):
        for p in (50, 90):
            name = f"{metric}_p{p}"
            want = rank(live[metric], p / 100) * 1e3
            got = rank(plan[metric], p / 100) * 1e3
            error = (got - want) / want if want else float("inf")
            miss = name in bounds and abs(error) > bounds[name]
            ok &= not miss
            mark = "  MISS" if miss else ""
            span = interval(plan_json, metric, p)
            text = ""
            if span:
                lo, hi = span
                figures += 1
                hit = lo <= want <= hi
                inside += hit
                text = f"[{lo:9.2f}, {hi:9.2f}] {'in' if hit else 'OUT'}"
            print(f"{name:<10} {want:12.2f} {got:13.2f} {error * 100:+7.1f}% {text}{mark}")
    if coverage:
        k, n = coverage
        if figures == 0:
            print("no intervals in the plan: coverage not judged (MISS)")
            ok = False
        else:
            enough = inside * n >= k * figures
            ok &= enough
            short = "" if enough else f"  MISS (fewer than {k} of every {n})"
            print(f"measured inside the predicted interval: {inside} of {figures}{short}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
