"""Checks one `arbor run` output directory of the end-to-end scripts.

    python3 scripts/e2e-check.py OUT_DIR API SERVER

SERVER is `llama-cpp-python` (scripts/e2e-llama.sh: one request at a time,
no usage in streams, so output tokens are counted from chunks) or
`llamacpp` (scripts/e2e-llama-cpp.sh: llama.cpp's C++ server, which reports
usage and cached prompt tokens, and serves /metrics). Prints a verdict and
`PROBLEM:` lines; exits 1 when a check fails.
"""
import json
import sys

out, api, server = sys.argv[1], sys.argv[2], sys.argv[3]
records = [json.loads(line) for line in open(f"{out}/records.jsonl")]
summary = json.load(open(f"{out}/summary.json"))
problems = []
if not records:
    problems.append("no records")
ids = [r["request"] for r in records]
if len(ids) != len(set(ids)):
    problems.append("a request was recorded twice")
for r in records:
    where = f"request {r['request']}"
    if r["status"] != "ok":
        problems.append(f"{where}: {r['status']} {r.get('error')}")
        continue
    if not (r["ttft_s"] and r["ttft_s"] > 0):
        problems.append(f"{where}: no TTFT")
    if abs(r["output_tokens"] - r["planned_output_tokens"]) > 1:
        problems.append(f"{where}: {r['output_tokens']} output tokens, planned {r['planned_output_tokens']}")
    if server == "llama-cpp-python":
        if r["output_tokens_source"] != "counted":
            problems.append(f"{where}: llama-cpp-python sends no usage, expected counted tokens")
    else:
        if r["output_tokens_source"] != "usage" or r["input_tokens_source"] != "usage":
            problems.append(f"{where}: expected usage-reported tokens, got input {r['input_tokens_source']}, output {r['output_tokens_source']}")

print(f"e2e ({server}, --api {api}): {len(records)} records in {out}")
ttft = sorted(r["ttft_s"] for r in records if r["ttft_s"])
if ttft:
    print(f"  TTFT p50 {ttft[len(ttft) // 2] * 1000:.0f} ms, max {ttft[-1] * 1000:.0f} ms")

if server == "llamacpp":
    ok = [r for r in records if r["status"] == "ok"]
    cached = sum(r.get("cached_tokens") or 0 for r in ok)
    inputs = sum(r.get("input_tokens") or 0 for r in ok)
    reused = sum(1 for r in ok if (r.get("cached_tokens") or 0) > 0)
    print(f"  prompt cache: {cached} of {inputs} input tokens cached, in {reused} of {len(ok)} requests")
    if cached == 0:
        problems.append("the server reported no cached prompt tokens: no prompt-cache reuse seen")
    try:
        samples = [json.loads(line) for line in open(f"{out}/metrics.jsonl")]
    except FileNotFoundError:
        samples = []
        problems.append("no metrics.jsonl: the server's /metrics was not scraped")
    processing = [s["value"] for s in samples if s["name"] == "llamacpp:requests_processing"]
    if samples and not processing:
        problems.append("metrics.jsonl has no llamacpp:requests_processing samples")
    if processing:
        print(f"  server metrics: {len(samples)} samples; requests_processing max {max(processing):.0f}")
        if max(processing) < 2:
            problems.append("the server never ran two requests at once (continuous batching not seen)")

for p in problems:
    print("  PROBLEM:", p)
sys.exit(1 if problems else 0)
