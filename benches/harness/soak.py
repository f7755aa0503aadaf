#!/usr/bin/env python3
"""A long soak of `arbor run`: memory flat, every request accounted for.

    benches/harness/soak.py [--minutes 30] [--sessions 256] [--arbor PATH] [--out DIR]

Starts `arbor emulate` (zero latency, 127.0.0.1) and `arbor run
--sessions N --loop --duration` against it, samples the client's resident
memory (VmRSS of /proc/PID/status) every 10 s, and checks, when the run is
over (issue 27, item 18):

- RSS flat: after the warm-up (the first quarter of the run, at most 5
  minutes), the largest sample is within 10 % of the sample at the end of
  the warm-up;
- records = requests: the lines of records.jsonl equal the summary's
  dispatched requests plus warmups;
- `arbor summarize` of the result needs at most 200 MB (peak RSS read with
  wait4, as /usr/bin/time -v does).

Writes OUT/rss.tsv (seconds, RSS in kB, bytes of records.jsonl so far:
its lines are counted once, at the end) and prints one line
per check and a verdict; exits 1 when a check fails. A benchmark, not a
test: figures go in docs/performance.md with the command that made them.
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def count_lines(path):
    try:
        with open(path, "rb") as f:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
    except OSError:
        return 0


def wait_ready(port, deadline_s=30):
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return True
        except OSError:
            time.sleep(0.1)
    return False


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--minutes", type=float, default=30)
    p.add_argument("--sessions", type=int, default=256)
    p.add_argument("--arbor", default=os.path.join(ROOT, "target/release/arbor"))
    p.add_argument("--out", default="/tmp/arbor-soak")
    a = p.parse_args()

    os.makedirs(a.out, exist_ok=True)
    run_dir = os.path.join(a.out, "run")
    port = free_port()
    emulator = subprocess.Popen(
        [a.arbor, "emulate", "--port", str(port), "--ttft-ms", "0", "--itl-ms", "0"],
        stdout=subprocess.DEVNULL,
        stderr=open(os.path.join(a.out, "emulate.log"), "w"),
    )
    try:
        if not wait_ready(port):
            print("soak: the emulator did not start", file=sys.stderr)
            return 1
        duration_s = int(a.minutes * 60)
        run = subprocess.Popen(
            [
                a.arbor, "run", "--endpoint", f"http://127.0.0.1:{port}",
                "--synthetic", "trees=512,turns=4,child_turns=2,isl=64,osl=16,seed=1",
                "--tool-time", "zero", "--think-time-pct", "0",
                "--sessions", str(a.sessions), "--loop", "--duration", str(duration_s),
                "--no-progress", "--force", "-o", run_dir,
            ],
            stdout=open(os.path.join(a.out, "run.log"), "w"),
            stderr=subprocess.STDOUT,
        )
        samples = []
        started = time.monotonic()
        with open(os.path.join(a.out, "rss.tsv"), "w") as tsv:
            tsv.write("t_s\trss_kb\trecords_bytes\n")
            while run.poll() is None:
                kb = rss_kb(run.pid)
                if kb is not None:
                    t = time.monotonic() - started
                    try:
                        records = os.path.getsize(os.path.join(run_dir, "records.jsonl"))
                    except OSError:
                        records = 0
                    samples.append((t, kb, records))
                    tsv.write(f"{t:.0f}\t{kb}\t{records}\n")
                    tsv.flush()
                time.sleep(10)
        run_exit = run.wait()
    finally:
        emulator.terminate()
        emulator.wait()

    failed = []
    lines = count_lines(os.path.join(run_dir, "records.jsonl"))
    print(f"soak: arbor run exited {run_exit} after {time.monotonic() - started:.0f} s, {len(samples)} RSS samples")
    if run_exit != 0:
        failed.append("run")
    warmup_s = min(duration_s / 4, 300)
    # Judged while requests flow (up to --duration); what the end costs
    # (the summary and the report page, written from records.jsonl) is
    # reported beside it.
    after = [s for s in samples if warmup_s <= s[0] < duration_s]
    end = [s for s in samples if s[0] >= duration_s]
    if end:
        print(f"soak: after --duration (the summary and the page): peak RSS {max(s[1] for s in end) / 1024:.1f} MB")
    if len(after) >= 2:
        base = after[0][1]
        peak = max(s[1] for s in after)
        growth = (peak - base) / base
        total_bytes = after[-1][2] or 1
        # Records over the judged stretch, from the bytes (lines are about
        # the same length).
        records = int(lines * (after[-1][2] - after[0][2]) / total_bytes)
        per_request = (after[-1][1] - base) * 1024 / records if records else 0
        ok = growth <= 0.10
        print(f"soak: RSS after a {warmup_s:.0f} s warm-up {base / 1024:.1f} MB, peak {peak / 1024:.1f} MB "
              f"(+{growth * 100:.1f} %, limit 10 %), {per_request:.1f} B per request over {records} records: "
              f"{'flat' if ok else 'GROWING'}")
        if not ok:
            failed.append("rss")
    else:
        print("soak: too few samples after the warm-up to judge RSS")
        failed.append("rss")

    try:
        with open(os.path.join(run_dir, "summary.json")) as f:
            requests = json.load(f)["counts"]
        accounted = requests["dispatched"] + requests["warmups"]
    except (OSError, KeyError, ValueError) as e:
        accounted = None
        print(f"soak: summary.json unreadable: {e}")
    ok = accounted == lines
    print(f"soak: records {lines}, requests in the summary {accounted}: {'all accounted for' if ok else 'MISMATCH'}")
    if not ok:
        failed.append("records")

    t0 = time.monotonic()
    summarize = subprocess.Popen([a.arbor, "summarize", run_dir],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # wait4 gives this child's own peak RSS (as /usr/bin/time -v reads it).
    _, status, usage = os.wait4(summarize.pid, 0)
    summarize.returncode = os.waitstatus_to_exitcode(status)
    peak_kb = usage.ru_maxrss
    ok = summarize.returncode == 0 and peak_kb <= 200 * 1024
    print(f"soak: arbor summarize exited {summarize.returncode} in {time.monotonic() - t0:.1f} s "
          f"peak RSS {peak_kb / 1024:.1f} MB (limit 200 MB): {'ok' if ok else 'TOO MUCH'}")
    if not ok:
        failed.append("summarize")
    print("soak: " + ("PASS" if not failed else "FAIL: " + ", ".join(failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
