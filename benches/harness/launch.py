#!/usr/bin/env python3
"""Runs one client process and measures what it used.

Part of arbor's measurement harness (benches/harness/run.sh).

    launch.py --emulator URL --usage OUT.json [--stamps OUT.json] [--cacert PEM]
              [--pty COLSxROWS] -- CMD...

An https:// emulator URL is trusted with --cacert (the harness's
HARNESS_TLS=1). The clock reads go over one kept-alive connection opened
(and, over TLS, handshaken) before them, so no handshake sits inside a
measured round trip.

Before the launch it drains the emulator's stamps (`GET /arbor/stamps?drain=1`)
and reads the emulator's clock (`GET /arbor/clock`) to get the offset
between that clock and this process's CLOCK_MONOTONIC (both are
CLOCK_MONOTONIC; the emulator counts from its own start; the offset is
taken as the midpoint of the round trip, good to tens of microseconds).
Then it stamps the launch and starts CMD, and waits for it with wait4,
which gives the child's user and system CPU time (microsecond resolution)
and peak RSS: the same figures as `/usr/bin/time -v`, nothing subtracted.
Afterwards it drains the stamps again (written to --stamps when given) and
computes the launch cost: the earliest `received_ns` among them, on this
process's clock, minus the launch stamp (the time from exec to the first
request arriving at the server: runtime start, workload load and plan,
model query, connection warm-up).

With --pty COLSxROWS the client's stderr is a pseudo-terminal of that
size (COLUMNS and LINES say it too), read and thrown away by a thread of
this process: what a terminal costs the client (`arbor run --ui
dashboard` draws on it) is in its figures, what the terminal itself costs
is not.

With --thread NAME it also samples, every 20 ms while the client runs,
the user+sys CPU of its threads named NAME (/proc/PID/task/*/stat; a
thread's last sample stands for it, so at most 20 ms of each is missed):
`thread_cpu_s` in the usage, e.g. `arbor-dashboard`, the dashboard's own
thread, whose CPU is what the dashboard costs the client.

With --emulator-pid it also reports the emulator's CPU over the run and
the rest of the machine's: busy CPU time from /proc/stat minus the client
and the emulator (`other_cores`: other processes' load, which on a shared
machine disturbs timing; it is printed with every result).
"""

import fcntl
import http.client
import json
import os
import pty
import ssl
import struct
import subprocess
import sys
import termios
import threading
import time
import urllib.parse


def connect(base, cafile):
    """A kept-alive connection to the emulator at `base` (http or https)."""
    u = urllib.parse.urlsplit(base)
    if u.scheme == "https":
        context = ssl.create_default_context(cafile=cafile)
        return http.client.HTTPSConnection(u.hostname, u.port, timeout=60, context=context)
    return http.client.HTTPConnection(u.hostname, u.port, timeout=60)


def get(conn, path):
    conn.request("GET", path)
    r = conn.getresponse()
    body = r.read()
    if r.status != 200:
        raise RuntimeError(f"GET {path}: HTTP {r.status}")
    return body


def machine_busy_s():
    """Busy (non-idle, non-iowait) CPU seconds of the whole machine."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    hz = os.sysconf("SC_CLK_TCK")
    return (sum(v[:8]) - v[3] - v[4]) / hz


def proc_cpu_s(pid):
    """user+sys CPU seconds of a process (/proc/PID/stat fields 14, 15)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return 0.0


def open_pty(size):
    """A pseudo-terminal of `size` (`COLSxROWS`): (its master, its slave,
    the thread that drains the master)."""
    cols, rows = (int(n) for n in size.lower().split("x"))
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def drain():
        while True:
            try:
                if not os.read(master, 65536):
                    return
            except OSError:  # EIO: the slave side closed
                return

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    return master, slave, reader


def thread_cpu_s(pid, name):
    """user+sys CPU seconds of each of `pid`'s threads named `name`, by
    thread id."""
    found = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                text = f.read()
        except OSError:
            continue
        comm = text[text.index("(") + 1:text.rindex(")")]
        if comm == name:
            fields = text.rsplit(")", 1)[1].split()
            found[tid] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return found


def sample_threads(pid, name, into, done):
    """Samples `pid`'s threads named `name` into `into` until `done`."""
    while not done.is_set():
        into.update(thread_cpu_s(pid, name))
        done.wait(0.02)


def main(argv):
    if "--" not in argv:
        print(__doc__)
        return 2
    i = argv.index("--")
    opts, cmd = argv[1:i], argv[i + 1:]
    o = dict(zip(opts[::2], opts[1::2]))
    base = o["--emulator"].rstrip("/")
    cafile = o.get("--cacert")
    conn = connect(base, cafile)
    get(conn, "/arbor/stamps?drain=1")
    offsets = []
    for _ in range(5):
        a = time.monotonic_ns()
        now = json.loads(get(conn, "/arbor/clock"))["now_ns"]
        b = time.monotonic_ns()
        offsets.append((b - a, now - (a + b) // 2))
    offset = min(offsets)[1]  # emulator clock = monotonic + offset
    stdout = open(o.get("--stdout", os.devnull), "w")
    emu_pid = o.get("--emulator-pid")
    emu0 = proc_cpu_s(emu_pid) if emu_pid else 0.0
    busy0 = machine_busy_s()
    launch = time.monotonic_ns()
    if "--pty" in o:
        master, slave, reader = open_pty(o["--pty"])
        cols, rows = o["--pty"].lower().split("x")
        env = dict(os.environ, COLUMNS=cols, LINES=rows)
        child = subprocess.Popen(cmd, stdout=stdout, stderr=slave, env=env)
        os.close(slave)
    else:
        child = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.STDOUT)
    threads, sampled = {}, threading.Event()
    sampler = None
    if "--thread" in o:
        sampler = threading.Thread(
            target=sample_threads, args=(child.pid, o["--thread"], threads, sampled), daemon=True)
        sampler.start()
    _, status, ru = os.wait4(child.pid, 0)
    sampled.set()
    if sampler:
        sampler.join()
    if "--pty" in o:
        reader.join(timeout=5)
        os.close(master)
    end = time.monotonic_ns()
    busy1 = machine_busy_s()
    emu1 = proc_cpu_s(emu_pid) if emu_pid else 0.0
    child.returncode = os.waitstatus_to_exitcode(status)
    conn.close()
    conn = connect(base, cafile)
    raw = get(conn, "/arbor/stamps?drain=1")
    conn.close()
    if "--stamps" in o:
        with open(o["--stamps"], "wb") as f:
            f.write(raw)
    stamps = json.loads(raw)
    first = min((s["received_ns"] for s in stamps), default=None)
    usage = {
        "cmd": cmd,
        "exit_code": child.returncode,
        "user_s": ru.ru_utime,
        "sys_s": ru.ru_stime,
        "maxrss_kb": ru.ru_maxrss,
        "wall_s": (end - launch) / 1e9,
        "launch_s": None if first is None else (first - offset - launch) / 1e9,
        "stamped_requests": len(stamps),
        "emulator_cpu_s": emu1 - emu0 if emu_pid else None,
        "machine_busy_s": busy1 - busy0,
        "other_cores": (busy1 - busy0 - (emu1 - emu0) - ru.ru_utime - ru.ru_stime)
        / ((end - launch) / 1e9) if emu_pid else None,
        "thread_cpu_s": sum(threads.values()) if "--thread" in o else None,
        "voluntary_ctx_switches": ru.ru_nvcsw,
        "involuntary_ctx_switches": ru.ru_nivcsw,
    }
    with open(o["--usage"], "w") as f:
        json.dump(usage, f, indent=1)
    if child.returncode != 0:
        print(f"launch.py: client exited with {child.returncode}: {' '.join(cmd)}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
