#!/usr/bin/env python3
"""Analysis of arbor's measurement harness (benches/harness/run.sh).

Python 3 standard library only. Four reports, each printed as a markdown
table row set and also written as JSON (`--json FILE`):

error RECORDS STAMPS
    The client's own timing error. RECORDS is `records.jsonl` of an
    `arbor run`; STAMPS the JSON array of `GET /arbor/stamps` of the
    emulator it ran against. Records and stamps are joined by request id
    (the client sends it as `x-arbor-request-id`). Per request:
        error_ttft = client ttft_s - (first_chunk_ns - received_ns)
    and per content chunk k >= 1:
        error_itl  = client itl_s[k-1] - (chunk_ns[k] - chunk_ns[k-1])
    Both are differences of durations, so the two processes' clocks need
    no common origin. Also lateness_s (sent - eligible) from the records.

overhead RECORDS USAGE
    The client's cost. USAGE is the JSON written by `launch.py` (rusage of
    the client process from wait4: user and system CPU, peak RSS; wall
    time; the launch-to-first-request time from the emulator's clock).
    CPU is divided by the requests (or streamed tokens) in the records,
    nothing subtracted. Concurrency held is computed from the records'
    sent_s/done_s: the peak of requests sent and not done, and the
    time-weighted mean over the whole window and over its middle 80 %
    (lanes run dry one by one at the end of a count-bounded run).

agree TIMELINE RECORDS [--stamps STAMPS]
    Virtual against live. TIMELINE is `arbor plan --timeline` of the same
    workload with `--service fixed:TTFT:ITL`; RECORDS the `arbor run`
    against `arbor emulate --ttft-ms TTFT --itl-ms ITL`. Turns are matched
    by (tree, agent, turn, copy); per turn: |live sent_s - planned
    start_s|, and the live incremental error lateness_s (sent - eligible).
    Also checks the per-agent order of sends is the planned one. With the
    emulator's STAMPS, each turn's own addition to the drift is split in
    four: the client's lateness (sent - eligible); the way in (sent to the
    server's receipt stamp: transit, the server waking up, reading the
    head); the server (its receipt-to-last-write time - the planned
    service time); the way out (the server's last write to the client's
    `done`). Both sides stamp CLOCK_MONOTONIC, but the client's records
    count from its own epoch: the offset is taken as the smallest
    (client done - server last write) over the run, so the way out is
    measured from the fastest one (it is tens of microseconds) and the
    four parts add up to the turn's drift exactly.

streams RECORDS USAGE BASE_USAGE [--fd-hard LIMIT]
    Concurrent streams one client process holds. RECORDS and USAGE are the
    run of N streams; BASE_USAGE the run of one stream against the same
    emulator. Held: the peak of requests sent and not done, from the
    records. Memory per stream: (peak RSS - the one-stream run's peak RSS)
    / (held - 1), in kB (target <= 20). Errors by class (target: no
    connect error). LIMIT is the hard fd limit the client could raise its
    soft limit to.
record DIRECT_REPORT PROXY_REPORT --cpu-ticks T --hz HZ --requests N
    The recording proxy's cost (`arbor record`). DIRECT_REPORT and
    PROXY_REPORT are the `error --json` reports of the same load run
    straight to the emulator and through the proxy. Each report's
    error_ttft is client TTFT - server TTFT of the same request, so the
    client's own error is in both and the proxy's added latency is in the
    second only: the proxy adds PROXY - DIRECT at p50 and at p99 (the
    runs' requests differ, so this is a difference of percentiles, not a
    percentile of differences). CPU per request: the proxy process's
    utime+stime (T clock ticks of HZ per second, from /proc/PID/stat)
    over its N capture lines (run.sh counts the ticks from when the proxy
    answers, so its start-up is left out).

Percentiles are nearest-rank, as in arbor.
"""

import json
import math
import sys


def pct(values, p):
    if not values:
        return float("nan")
    s = sorted(values)
    rank = max(1, math.ceil(p / 100.0 * len(s)))
    return s[rank - 1]


def dist(values, scale=1e3):
    """p50/p99/max (and count) in milliseconds (scale 1e3) or other unit."""
    return {
        "count": len(values),
        "p50": pct(values, 50) * scale,
        "p99": pct(values, 99) * scale,
        "max": max(values) * scale if values else float("nan"),
        "min": min(values) * scale if values else float("nan"),
        "mean": sum(values) / len(values) * scale if values else None,
    }


def read_records(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def load_usage(path):
    if not path:
        return {}
    with open(path) as f:
        return json.load(f)


def error(records_path, stamps_path, usage_path=None):
    records = read_records(records_path)
    usage = load_usage(usage_path)
    with open(stamps_path) as f:
        stamps = {s["request_id"]: s for s in json.load(f)}
    ttft_err, itl_err, lateness = [], [], []
    matched = unmatched = not_ok = chunk_mismatch = 0
    coalesced = 0
    for r in records:
        if r.get("lateness_s") is not None:
            lateness.append(r["lateness_s"])
        if r["status"] != "ok":
            not_ok += 1
            continue
        s = stamps.get(str(r["request"]))
        if s is None or s.get("first_chunk_ns") is None:
            unmatched += 1
            continue
        matched += 1
        server_ttft = (s["first_chunk_ns"] - s["received_ns"]) / 1e9
        ttft_err.append(r["ttft_s"] - server_ttft)
        chunks = s["chunk_ns"]
        client_gaps = r["itl_s"] or []
        if len(client_gaps) != len(chunks) - 1:
            chunk_mismatch += 1
            continue
        for k, gap in enumerate(client_gaps):
            server_gap = (chunks[k + 1] - chunks[k]) / 1e9
            if gap < 1e-6:
                coalesced += 1
            itl_err.append(gap - server_gap)
    out = {
        "records": len(records),
        "matched": matched,
        "unmatched": unmatched,
        "not_ok": not_ok,
        "chunk_count_mismatch": chunk_mismatch,
        "coalesced_chunks": coalesced,
        "ttft_error_ms": dist(ttft_err),
        "itl_error_ms": dist(itl_err),
        "abs_itl_error_p99_ms": pct([abs(e) for e in itl_err], 99) * 1e3,
        "lateness_ms": dist(lateness),
        "other_cores": usage.get("other_cores"),
        "emulator_cpu_s": usage.get("emulator_cpu_s"),
        "client_cpu_s": (usage["user_s"] + usage["sys_s"]) if usage else None,
    }
    return out


def inflight_profile(records):
    """(peak, time-weighted mean over the window, over its middle 80 %,
    window start, window end) of requests sent and not done."""
    events = []
    for r in records:
        if r.get("sent_s") is None or r.get("done_s") is None:
            continue
        events.append((r["sent_s"], 1))
        events.append((r["done_s"], -1))
    if not events:
        return 0, 0.0, 0.0, 0.0, 0.0
    # Ends before starts at the same instant: a lane's next request is sent
    # after its previous one finished, never held together.
    events.sort(key=lambda e: (e[0], e[1]))
    t0, t1 = events[0][0], events[-1][0]
    lo, hi = t0 + 0.1 * (t1 - t0), t0 + 0.9 * (t1 - t0)
    level = peak = 0
    area = area_mid = 0.0
    prev = t0
    for t, d in events:
        area += level * (t - prev)
        a, b = max(prev, lo), min(t, hi)
        if b > a:
            area_mid += level * (b - a)
        prev = t
        level += d
        peak = max(peak, level)
    span = t1 - t0
    return (peak, area / span if span > 0 else 0.0,
            area_mid / (hi - lo) if hi > lo else 0.0, t0, t1)


def overhead(records_path, usage_path):
    records = read_records(records_path)
    with open(usage_path) as f:
        usage = json.load(f)
    ok = [r for r in records if r["status"] == "ok"]
    tokens = sum(r["output_tokens"] or 0 for r in ok)
    cpu = usage["user_s"] + usage["sys_s"]
    peak, mean_all, mean_mid, t0, t1 = inflight_profile(records)
    ttfts = [r["ttft_s"] for r in ok if r.get("ttft_s") is not None]
    return {
        "requests": len(records),
        "ok": len(ok),
        "tokens": tokens,
        "window_s": t1 - t0,
        "requests_per_s": len(ok) / (t1 - t0) if t1 > t0 else float("nan"),
        "tokens_per_s": tokens / (t1 - t0) if t1 > t0 else float("nan"),
        "user_s": usage["user_s"],
        "sys_s": usage["sys_s"],
        "cpu_s": cpu,
        "wall_s": usage["wall_s"],
        "cores": cpu / usage["wall_s"] if usage["wall_s"] > 0 else float("nan"),
        "cpu_per_request_us": cpu / len(records) * 1e6 if records else float("nan"),
        "cpu_per_token_us": cpu / tokens * 1e6 if tokens else float("nan"),
        "peak_rss_mb": usage["maxrss_kb"] / 1024.0,
        "launch_to_first_request_s": usage.get("launch_s"),
        "inflight_peak": peak,
        "inflight_mean": mean_all,
        "inflight_mean_mid80": mean_mid,
        "ttft_ms": dist(ttfts),
        "emulator_cpu_s": usage.get("emulator_cpu_s"),
        "other_cores": usage.get("other_cores"),
    }


def agree(timeline_path, records_path, usage_path=None, stamps_path=None):
    usage = load_usage(usage_path)
    stamps = {}
    if stamps_path:
        with open(stamps_path) as f:
            stamps = {s["request_id"]: s for s in json.load(f)}
    way_in, server, way_out, joined, own = [], [], [], [], []
    planned = {}
    with open(timeline_path) as f:
        for line in f:
            t = json.loads(line)
            planned[(t["tree"], t["agent"], t["turn"], t["copy"])] = t
    records = read_records(records_path)
    diffs, signed, lateness, eligible_diff = [], [], [], []
    unmatched = 0
    live_order, plan_order = {}, {}
    for r in records:
        key = (r["tree"], r["agent"], r["turn"], r["copy"])
        p = planned.get(key)
        if p is None or p.get("start_s") is None or r.get("sent_s") is None:
            unmatched += 1
            continue
        d = r["sent_s"] - p["start_s"]
        signed.append(d)
        diffs.append(abs(d))
        eligible_diff.append(r["eligible_s"] - p["eligible_s"])
        if r.get("lateness_s") is not None:
            lateness.append(r["lateness_s"])
        st = stamps.get(str(r["request"]))
        if st and st.get("done_ns") and r.get("done_s") is not None:
            joined.append((r, p, st))
        live_order.setdefault(r["agent"], []).append((r["sent_s"], r["turn"]))
        plan_order.setdefault(r["agent"], []).append((p["start_s"], r["turn"]))
    if joined:
        offset = min(r["done_s"] * 1e9 - st["done_ns"] for r, _, st in joined)
        for r, p, st in joined:
            received = (st["received_ns"] + offset) / 1e9
            last_write = (st["done_ns"] + offset) / 1e9
            way_in.append(received - r["sent_s"])
            server.append(last_write - received - (p["end_s"] - p["start_s"]))
            way_out.append(r["done_s"] - last_write)
            own.append((r.get("lateness_s") or 0.0) + way_in[-1] + server[-1] + way_out[-1])
    # Global order of sends: does the live run send turns in the planned
    # order? Count pairs of consecutive planned sends that swapped.
    keys = [k for k in planned if planned[k].get("start_s") is not None]
    by_key = {(r["tree"], r["agent"], r["turn"], r["copy"]): r for r in records}
    keys = [k for k in keys if k in by_key and by_key[k].get("sent_s") is not None]
    keys.sort(key=lambda k: planned[k]["start_s"])
    swaps = 0
    for a, b in zip(keys, keys[1:]):
        if planned[a]["start_s"] < planned[b]["start_s"] and \
                by_key[a]["sent_s"] > by_key[b]["sent_s"]:
            swaps += 1
    last_planned = max((p["end_s"] for p in planned.values()
                        if p.get("end_s") is not None), default=float("nan"))
    last_live = max((r["done_s"] for r in records if r.get("done_s") is not None),
                    default=float("nan"))
    return {
        "planned_turns": len(planned),
        "live_records": len(records),
        "matched": len(diffs),
        "unmatched": unmatched,
        "order_swaps": swaps,
        "start_abs_diff_ms": dist(diffs),
        "start_signed_diff_ms": dist(signed),
        "eligible_diff_ms": dist(eligible_diff),
        "lateness_ms": dist(lateness),
        "way_in_ms": dist(way_in),
        "server_excess_ms": dist(server),
        "way_out_ms": dist(way_out),
        "own_drift_ms": dist(own),
        "planned_makespan_s": last_planned,
        "live_makespan_s": last_live,
        "other_cores": usage.get("other_cores"),
    }


def streams(records_path, usage_path, base_usage_path, fd_hard=None):
    records = read_records(records_path)
    usage = load_usage(usage_path)
    base = load_usage(base_usage_path)
    peak, _, _, t0, t1 = inflight_profile(records)
    errors = {}
    for r in records:
        if r["status"] != "ok":
            cls = (r.get("error") or {}).get("category", r["status"])
            errors[cls] = errors.get(cls, 0) + 1
    rss_kb, base_kb = usage["maxrss_kb"], base["maxrss_kb"]
    per_stream = (rss_kb - base_kb) / (peak - 1) if peak > 1 else float("nan")
    return {
        "streams": len(records),
        "held": peak,
        "ok": sum(1 for r in records if r["status"] == "ok"),
        "errors": errors,
        "connect_errors": errors.get("connect", 0),
        "window_s": t1 - t0,
        "peak_rss_mb": rss_kb / 1024.0,
        "one_stream_rss_mb": base_kb / 1024.0,
        "kb_per_stream": per_stream,
        "cpu_s": usage["user_s"] + usage["sys_s"],
        "fd_hard_limit": fd_hard,
    }


def record(direct_path, proxy_path, cpu_ticks, hz, requests):
    with open(direct_path) as f:
        direct = json.load(f)["ttft_error_ms"]
    with open(proxy_path) as f:
        proxy = json.load(f)["ttft_error_ms"]
    cpu_s = int(cpu_ticks) / int(hz)
    requests = int(requests)
    return {
        "streams_direct": direct["count"],
        "streams_proxy": proxy["count"],
        "ttft_error_direct_ms": {"p50": direct["p50"], "p99": direct["p99"]},
        "ttft_error_proxy_ms": {"p50": proxy["p50"], "p99": proxy["p99"]},
        "proxy_adds_ms": {"p50": proxy["p50"] - direct["p50"],
                          "p99": proxy["p99"] - direct["p99"]},
        "proxy_cpu_s": cpu_s,
        "requests": requests,
        "cpu_per_request_us": cpu_s / max(requests, 1) * 1e6,
    }


def print_record(r):
    print("| TTFT (ms) | p50 | p99 |")
    print("|---|---:|---:|")
    for label, key in (("direct: client - server", "ttft_error_direct_ms"),
                       ("through arbor record: client - server", "ttft_error_proxy_ms"),
                       ("**the proxy adds** (through - direct)", "proxy_adds_ms")):
        print(f"| {label} | {fmt(r[key]['p50'])} | {fmt(r[key]['p99'])} |")
    print()
    print(f"Proxy CPU (user+sys): {fmt(r['proxy_cpu_s'], 2)} s for {r['requests']} requests, "
          f"{fmt(r['cpu_per_request_us'], 0)} us per request.")


def fmt(x, nd=3):
    if x is None:
        return "-"
    if isinstance(x, float):
        return "nan" if math.isnan(x) else f"{x:.{nd}f}"
    return str(x)


def print_error(name, e):
    print(f"| {name} | {e['matched']}/{e['records']} | "
          f"{fmt(e['ttft_error_ms']['p50'])} / {fmt(e['ttft_error_ms']['p99'])} / {fmt(e['ttft_error_ms']['max'])} | "
          f"{fmt(e['itl_error_ms']['p50'])} / {fmt(e['itl_error_ms']['p99'])} / {fmt(e['itl_error_ms']['max'])} "
          f"(min {fmt(e['itl_error_ms']['min'])}) | "
          f"{fmt(e['lateness_ms']['p50'])} / {fmt(e['lateness_ms']['p99'])} / {fmt(e['lateness_ms']['max'])} | "
          f"{fmt(e['other_cores'], 2)} |")


def print_overhead(name, o):
    print(f"| {name} | {o['requests']} | {o['tokens']} | {fmt(o['window_s'], 2)} | "
          f"{fmt(o['cpu_s'], 3)} ({fmt(o['user_s'], 2)}u+{fmt(o['sys_s'], 2)}s) | "
          f"{fmt(o['cpu_per_request_us'], 1)} | {fmt(o['cpu_per_token_us'], 3)} | "
          f"{fmt(o['requests_per_s'], 0)} | {fmt(o['tokens_per_s'], 0)} | "
          f"{o['inflight_peak']} / {fmt(o['inflight_mean'], 1)} / {fmt(o['inflight_mean_mid80'], 1)} | "
          f"{fmt(o['ttft_ms']['p50'], 2)} / {fmt(o['ttft_ms']['p99'], 2)} | "
          f"{fmt(o['peak_rss_mb'], 1)} | {fmt(o['launch_to_first_request_s'], 3)} | "
          f"{fmt(o['other_cores'], 2)} |")


def print_streams(name, s):
    errors = ", ".join(f"{k} {v}" for k, v in sorted(s["errors"].items())) or "none"
    print(f"| {name} | {s['streams']} | {s['held']} | {s['ok']} | {errors} | "
          f"{fmt(s['peak_rss_mb'], 1)} | {fmt(s['one_stream_rss_mb'], 1)} | "
          f"{fmt(s['kb_per_stream'], 1)} | {fmt(s['cpu_s'], 2)} | {s['fd_hard_limit'] or '-'} |")


def print_agree(name, a):
    s, l, e = a["start_abs_diff_ms"], a["lateness_ms"], a["eligible_diff_ms"]
    print(f"| {name} | {a['matched']}/{a['planned_turns']} | {a['order_swaps']} | "
          f"{fmt(s['p50'])} / {fmt(s['p99'])} / {fmt(s['max'])} | "
          f"{fmt(l['p50'])} / {fmt(l['p99'])} / {fmt(l['max'])} | "
          f"{fmt(a['planned_makespan_s'])} / {fmt(a['live_makespan_s'])} | "
          f"{fmt(a['other_cores'], 2)} |")


def print_agree_parts(name, a):
    parts = [a["lateness_ms"], a["way_in_ms"], a["server_excess_ms"], a["way_out_ms"]]
    cells = " | ".join(f"{fmt(d['p50'])} / {fmt(d['p99'])}" for d in parts)
    own = a["own_drift_ms"]
    print(f"| {name} | {cells} | {fmt(own['p50'])} / {fmt(own['p99'])} / {fmt(own['max'])} |")


AGREE_PARTS_HEADER = """\
| scenario | client lateness ms p50 / p99 | way in (sent to server receipt) ms p50 / p99 | server - plan ms p50 / p99 | way out (last write to done) ms p50 / p99 | the turn's own drift (the four summed) ms p50 / p99 / max |
|---|---|---|---|---|---|"""

ERROR_HEADER = """\
| scenario | joined | TTFT error ms p50 / p99 / max | ITL error ms p50 / p99 / max | lateness ms p50 / p99 / max | other load (cores) |
|---|---|---|---|---|---|"""
OVERHEAD_HEADER = """\
| scenario | requests | tokens | window s | client CPU s (user+sys) | CPU/request µs | CPU/token µs | req/s | tok/s | in flight peak / mean / mean mid-80% | TTFT ms p50 / p99 | peak RSS MB | launch s | other load (cores) |
|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"""
STREAMS_HEADER = """\
| scenario | streams | held at once | ok | errors | peak RSS MB | one stream's peak RSS MB | kB per stream (target <= 20) | client CPU s | hard fd limit |
|---|---|---|---|---|---|---|---|---|---|"""
AGREE_HEADER = """\
| scenario | turns matched | order swaps | abs(live start - planned start) ms p50 / p99 / max | lateness ms p50 / p99 / max | makespan s planned / live | other load (cores) |
|---|---|---|---|---|---|---|"""


def pop_option(args, flag):
    """Removes `flag VALUE` from args; returns VALUE (None when absent)."""
    if flag not in args:
        return None
    i = args.index(flag)
    value = args[i + 1]
    del args[i:i + 2]
    return value


def pop_flag(args, flag):
    """Removes `flag` from args; returns whether it was there."""
    if flag in args:
        args.remove(flag)
        return True
    return False


def main(argv):
    if len(argv) == 3 and argv[1] == "header":
        print({"error": ERROR_HEADER, "overhead": OVERHEAD_HEADER,
               "agree": AGREE_HEADER, "agree-parts": AGREE_PARTS_HEADER,
               "streams": STREAMS_HEADER}[argv[2]])
        return 0
    if len(argv) < 2 or argv[1] not in ("error", "overhead", "agree", "streams", "record"):
        print(__doc__)
        return 2
    args = argv[2:]
    json_out = pop_option(args, "--json")
    name = pop_option(args, "--name") or argv[1]
    header = pop_flag(args, "--header")
    if argv[1] == "error":
        out = error(*args)
        if header:
            print(ERROR_HEADER)
        print_error(name, out)
    elif argv[1] == "streams":
        fd_hard = pop_option(args, "--fd-hard")
        out = streams(*args, fd_hard=fd_hard)
        if header:
            print(STREAMS_HEADER)
        print_streams(name, out)
    elif argv[1] == "record":
        ticks = pop_option(args, "--cpu-ticks")
        hz = pop_option(args, "--hz")
        requests = pop_option(args, "--requests")
        out = record(*args, ticks, hz, requests)
        print_record(out)
    elif argv[1] == "overhead":
        out = overhead(*args)
        if header:
            print(OVERHEAD_HEADER)
        print_overhead(name, out)
    else:
        stamps = pop_option(args, "--stamps")
        parts = pop_flag(args, "--parts")
        out = agree(*args, stamps_path=stamps)
        if header:
            print(AGREE_PARTS_HEADER if parts else AGREE_HEADER)
        if parts:
            print_agree_parts(name, out)
        else:
            print_agree(name, out)
    if json_out:
        with open(json_out, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
