#!/usr/bin/env bash
# The dashboard of `arbor run` in tmux, captured as text at three moments
# (early, mid-run, after the end) at 80x24 and 200x50: docs/dashboard/.
#
#   scripts/dashboard-captures.sh [ARBOR]     # ARBOR: default target/debug/arbor
#
# Needs tmux (`sudo apt-get install -y tmux`). The run is the demo (the
# bundled sample against the built-in emulator) with a token every 1 ms
# (about 27 s) and injected faults (5 % HTTP 500, 2 % cut streams), so the
# errors section has something to show. At 80 columns the dashboard is not
# the default (it needs 100), so `--ui dashboard` asks for it; at 200 it is
# the default. Prints where the captures went.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ARBOR="$(realpath "${1:-$ROOT/target/debug/arbor}")"
OUT="$ROOT/docs/dashboard"
mkdir -p "$OUT"
command -v tmux >/dev/null || { echo "tmux is missing: sudo apt-get install -y tmux" >&2; exit 1; }

capture() { # NAME COLUMNS ROWS UI...
    local name="$1" cols="$2" rows="$3"; shift 3
    local session="arbor-dash-$name" run="/tmp/arbor-dash-$name"
    rm -rf "$run"
    tmux kill-session -t "$session" 2>/dev/null || true
    tmux new-session -d -s "$session" -x "$cols" -y "$rows" \
        "cd /tmp && '$ARBOR' run $* --itl-ms 1 --fail-rate 0.05 --disconnect-rate 0.02 --out '$run'; sleep 120"
    sleep 4
    tmux capture-pane -p -t "$session" >"$OUT/$name-early.txt"
    sleep 10
    tmux capture-pane -p -t "$session" >"$OUT/$name-mid.txt"
    while [[ ! -f "$run/report.html" ]]; do sleep 1; done
    sleep 1
    # After the end: the final frame and the table, scrolled back.
    tmux capture-pane -p -S -200 -t "$session" >"$OUT/$name-after.txt"
    tmux kill-session -t "$session"
}

capture 80x24 80 24 --ui dashboard
capture 200x50 200 50
ls "$OUT"
