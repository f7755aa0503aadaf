#!/usr/bin/env bash
# `arbor export --aiperf` checked against AIPerf itself: installs AIPerf
# 0.13.0 from PyPI into a virtual environment, exports a run, loads both
# files with AIPerf's own result models (scripts/aiperf/check.py), and runs
# `aiperf plot` on the export, which must write its PNGs.
#
#   scripts/aiperf-check.sh            # a short AgentX run against the built-in emulator
#   scripts/aiperf-check.sh RUN_DIR    # a run directory already written
#   scripts/aiperf-check.sh --repeat   # also a `--repeat 2` run: its export's
#                                      # aggregate file loaded with AIPerf's
#                                      # aggregate model, and each run
#
# Environment:
#   AIPERF_VENV  the venv (default ~/.cache/arbor-aiperf-venv; made once,
#                then reused while its aiperf is 0.13.0)
#   ARBOR        the arbor binary (default target/debug/arbor, built when
#                missing)
#   OUT          work directory (default target/aiperf-check): run/,
#                export/, plots/ (the PNGs), home/ (aiperf plot's config)
#
# `aiperf plot` draws through Kaleido, which needs a Chrome:
# BROWSER_PATH is Debian's chromium-headless-shell, installed with apt-get
# when neither it nor chromium is on PATH (as scripts/check-report.sh).
# Every step is bounded by `timeout`; the time each took is printed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
OUT=${OUT:-$root/target/aiperf-check}
AIPERF_VENV=${AIPERF_VENV:-$HOME/.cache/arbor-aiperf-venv}
ARBOR=${ARBOR:-$root/target/debug/arbor}
AIPERF_VERSION=0.13.0
mkdir -p "$OUT"

step_start=$SECONDS
step() {
  echo "aiperf-check: $1 ($((SECONDS - step_start)) s)"
  step_start=$SECONDS
}

# 1. The venv.
venv_version() {
  "$AIPERF_VENV/bin/python" -c 'import aiperf; print(aiperf.__version__)' 2>/dev/null || true
}
if [ "$(venv_version)" != "$AIPERF_VERSION" ]; then
  echo "aiperf-check: installing aiperf==$AIPERF_VERSION into $AIPERF_VENV (a few minutes)"
  rm -rf "$AIPERF_VENV"
  python3 -m venv "$AIPERF_VENV"
  timeout 1200 "$AIPERF_VENV/bin/pip" install -q "aiperf==$AIPERF_VERSION"
fi
step "venv: aiperf $(venv_version)"

# 2. The run.
if [ ! -x "$ARBOR" ]; then
  (cd "$root" && timeout 1800 cargo build -q -p arbor-cli)
fi
repeat=
if [ "${1:-}" = "--repeat" ]; then
  repeat=1
  shift
fi
if [ $# -ge 1 ]; then
  run_dir=$1
else
  run_dir=$OUT/run
  rm -rf "$run_dir"
  timeout 300 "$ARBOR" run "$root/testdata/weka-kv-cache-tester" \
    --scenario agentx-mvp --sessions 3 --duration 2 --unsafe-override \
    --idle-gap-cap 0.5 --warmup-spread 0.5 --seed 7 --ttft-ms 2 --itl-ms 0.05 \
    --out "$run_dir" --no-progress >/dev/null
  step "run: $run_dir (a short AgentX run against the built-in emulator)"
fi

# 3. The export, loaded with AIPerf's models.
rm -rf "$OUT/export" "$OUT/plots"
timeout 300 "$ARBOR" export "$run_dir" --aiperf "$OUT/export"
mkdir -p "$OUT/home"
HOME="$OUT/home" timeout 300 "$AIPERF_VENV/bin/python" "$here/aiperf/check.py" "$OUT/export"
step "export loaded with AIPerf's models"

# 3b. With --repeat: a `--repeat 2` run, its export and AIPerf's aggregate model.
if [ -n "$repeat" ]; then
  rm -rf "$OUT/repeat" "$OUT/repeat-export"
  timeout 300 "$ARBOR" run "$root/testdata/weka-kv-cache-tester" \
    --scenario agentx-mvp --sessions 3 --duration 2 --unsafe-override \
    --idle-gap-cap 0.5 --warmup-spread 0.5 --seed 7 --ttft-ms 2 --itl-ms 0.05 \
    --repeat 2 --out "$OUT/repeat" --no-progress >/dev/null
  timeout 300 "$ARBOR" export "$OUT/repeat" --aiperf "$OUT/repeat-export"
  HOME="$OUT/home" timeout 300 "$AIPERF_VENV/bin/python" "$here/aiperf/check.py" "$OUT/repeat-export"
  step "--repeat 2: aggregate export loaded with AIPerf's aggregate model"
fi

# 4. aiperf plot.
# shellcheck source=scripts/chromium.sh
. "$here/chromium.sh"
BROWSER_PATH=$(chromium_path)
export BROWSER_PATH
HOME="$OUT/home" timeout 600 "$AIPERF_VENV/bin/aiperf" plot "$OUT/export" --output "$OUT/plots" \
  >"$OUT/plot.log" 2>&1 || { cat "$OUT/plot.log" >&2; echo "aiperf-check: FAIL: aiperf plot" >&2; exit 1; }
pngs=0
for png in "$OUT"/plots/*.png; do
  [ -s "$png" ] || continue
  # A PNG starts with \x89PNG.
  if [ "$(head -c 4 "$png" | tail -c 3)" = "PNG" ]; then
    pngs=$((pngs + 1))
    echo "ok   $png"
  fi
done
for expected in ttft_over_time.png ttft_timeline.png; do
  if [ ! -s "$OUT/plots/$expected" ]; then
    cat "$OUT/plot.log" >&2
    echo "aiperf-check: FAIL: aiperf plot wrote no $expected" >&2
    exit 1
  fi
done
step "aiperf plot: $pngs PNGs in $OUT/plots"
# Plots it skipped, and why (timeslices and GPU telemetry: arbor has neither).
grep -h "Skipping plot" "$OUT/plots/aiperf_plot.log" 2>/dev/null | sed 's/.*Skipping plot/note: aiperf plot skipped/' || true
echo "aiperf-check: ok (${SECONDS} s in all)"
