#!/usr/bin/env bash
# Browser check of `arbor report`: renders report pages in headless
# Chromium, fails on any console error or empty chart, saves screenshots.
#
#   scripts/check-report.sh                  # the pages below
#   scripts/check-report.sh PAGE.html...     # pages already written
#
# With no argument it builds arbor (debug) and checks the pages a user
# meets: the demo run's own report.html; a run whose every request failed
# (`--fail-rate 1`: its verdict must lead with the server's words);
# `arbor report` of two runs that differ in the emulator's TTFT (the
# configuration must show what differed); twenty runs at 5..100 sessions
# given in shell-glob order (drawn in load order, under 5 MB); the page
# of a plan (`arbor plan --report` of the testdata fixtures under
# --sessions 2, so it has lanes); the multi-run page of `arbor run
# --repeat 2` (its spread), redrawn by `arbor report OUT` first; and the
# capacity pages of a 20-load virtual sweep (under 5 MB), of a sweep of
# trees with subagents (its agents, jobs/h and Pareto), and of a live
# search against the built-in emulator (`arbor capacity` writes each;
# `arbor report DIR` redraws the live one). Screenshots go beside each
# page's check files in $OUT (default target/report-check): <name>.png
# (1400x2400, or $WINDOW). With IMAGES=DIR, the top of each is also saved
# as DIR/report-<name>.png (docs/images holds the committed ones).
#
# The page checks itself: once every chart has rendered with data and the
# swim lanes drew bars, it sets its title to "arbor report: ok"; on any
# error, to "arbor report: error: ...". This script reads the title from
# Chromium's --dump-dom, and also fails on an "Uncaught" error or a console
# error in Chromium's log.
#
# Installs Debian's chromium-headless-shell with apt-get when neither it
# nor chromium is on PATH. Every step is bounded by `timeout`; running it
# twice does the same thing twice.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
OUT=${OUT:-$root/target/report-check}
WINDOW=${WINDOW:-1400,2400}
mkdir -p "$OUT"

# shellcheck source=scripts/chromium.sh
. "$here/chromium.sh"
BROWSER=$(chromium_path)

flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
  --disable-background-networking --disable-component-update --disable-sync
  --hide-scrollbars --enable-logging=stderr --v=0 --virtual-time-budget=5000)

# A person's session, scripted: log-scale CDFs, hover along the first lane
# row until a record shows, zoom, drag. Appended after the page's </html>
# (the parser runs it in the body); sets the title's tail.
interaction=$(cat <<'JS'
<script>
(function(){
  try {
  var log = document.getElementById('cdf-log');
  if (log && log.isConnected) log.click();
  var c = document.getElementById('lanes');
  if (!c) {
    // A page without swim lanes (the capacity page): hover its first
    // chart until its readout names a probe's values.
    var over = document.querySelector('.u-over'), out = document.querySelector('.cap-readout'), read = 0;
    if (over && out) {
      var o = over.getBoundingClientRect();
      for (var ox = 1; ox < o.width && !read; ox += 2) {
        over.dispatchEvent(new MouseEvent('mousemove', {clientX: o.left + ox, clientY: o.top + o.height / 2, bubbles: true}));
        if (out.textContent.indexOf(': ') > 0) read++;
      }
    }
    document.title += ' | interacted, tip ' + read;
    return;
  }
  var r = c.getBoundingClientRect();
  // hover along a row until the tip shows
  var shown = 0;
  for (var x = 188; x < r.width; x += 1) {
    c.dispatchEvent(new MouseEvent('mousemove', {clientX: r.left + x, clientY: r.top + 22 + 5, bubbles: true}));
    if (document.getElementById('tip').style.display === 'block') { shown++; break; }
  }

  c.dispatchEvent(new WheelEvent('wheel', {deltaY: -400, clientX: r.left + 400, clientY: r.top + 60, bubbles: true, cancelable: true}));
  c.dispatchEvent(new MouseEvent('mousedown', {clientX: r.left + 400, clientY: r.top + 100, bubbles: true}));
  c.dispatchEvent(new MouseEvent('mousemove', {clientX: r.left + 300, clientY: r.top + 50, bubbles: true}));
  window.dispatchEvent(new MouseEvent('mouseup', {}));
  document.title += ' | interacted, tip ' + shown;
  } catch (e) { document.title = 'arbor report: error: ' + e; }
})();
</script>
JS
)

# check PAGE NAME: renders PAGE, checks its title and log, saves NAME.png.
check() {
  local page name profile dom log
  page=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
  name=$2
  dom=$OUT/$name.dom.html
  log=$OUT/$name.log
  profile=$(mktemp -d)
  timeout 90 "$BROWSER" "${flags[@]}" --user-data-dir="$profile" --dump-dom "file://$page" >"$dom" 2>"$log" || {
    echo "check-report: $name: chromium failed (see $log)" >&2
    rm -rf "$profile"
    return 1
  }
  rm -rf "$profile"
  profile=$(mktemp -d)
  timeout 90 "$BROWSER" "${flags[@]}" --user-data-dir="$profile" --window-size="$WINDOW" \
    --screenshot="$OUT/$name.png" "file://$page" >/dev/null 2>>"$log" || {
    echo "check-report: $name: screenshot failed (see $log)" >&2
    rm -rf "$profile"
    return 1
  }
  rm -rf "$profile"
  local title
  title=$({ grep -o '<title>[^<]*</title>' "$dom" || true; } | head -1 | sed 's/<[^>]*>//g')
  if [ "$title" != "arbor report: ok" ]; then
    echo "check-report: $name: the page says: ${title:-no title}" >&2
    return 1
  fi
  if grep -E 'Uncaught|CONSOLE.*(error|Error)' "$log" >&2; then
    echo "check-report: $name: console error (above; log in $log)" >&2
    return 1
  fi
  # The same page, used: no error, and hovering shows a record.
  cat "$page" >"$OUT/$name.used.html"
  printf '%s\n' "$interaction" >>"$OUT/$name.used.html"
  profile=$(mktemp -d)
  timeout 90 "$BROWSER" "${flags[@]}" --user-data-dir="$profile" --window-size="$WINDOW" \
    --dump-dom "file://$OUT/$name.used.html" >"$OUT/$name.used.dom.html" 2>>"$log" || true
  rm -rf "$profile"
  title=$({ grep -o '<title>[^<]*</title>' "$OUT/$name.used.dom.html" || true; } | head -1 | sed 's/<[^>]*>//g')
  local want="arbor report: ok | interacted, tip 1"
  if grep -q 'data-lane-bars="0"' "$dom"; then want="arbor report: ok | interacted, tip 0"; fi
  if [ "$title" != "$want" ]; then
    echo "check-report: $name: after zoom, pan and hover the page says: ${title:-no title}" >&2
    return 1
  fi
  local render ready bars
  render=$({ grep -o 'data-render-ms="[0-9]*"' "$dom" || true; } | head -1 | tr -dc 0-9)
  ready=$({ grep -o 'data-ready-ms="[0-9]*"' "$dom" || true; } | head -1 | tr -dc 0-9)
  # A page without swim lanes (the capacity page) has no count.
  bars=$({ grep -o 'data-lane-bars="[0-9]*"' "$dom" || true; } | head -1 | tr -dc 0-9 || true)
  local drawn="${bars:-?} lane bars"
  if [ -z "$bars" ]; then
    drawn="$({ grep -o 'data-charts="[0-9]*"' "$dom" || true; } | head -1 | tr -dc 0-9 || true) charts"
  fi
  echo "check-report: $name ok ($(du -k "$page" | cut -f1) kB; script ${render:-?} ms, interactive ${ready:-?} ms after navigation start, $drawn; screenshot $OUT/$name.png)"
  if [ -n "${IMAGES:-}" ]; then
    mkdir -p "$IMAGES"
    python3 - "$OUT/$name.png" "$IMAGES/report-$name.png" <<'PY' || cp "$OUT/$name.png" "$IMAGES/report-$name.png"
import sys
from PIL import Image
im = Image.open(sys.argv[1])
im.crop((0, 0, im.width, min(im.height, 1500))).save(sys.argv[2], optimize=True)
PY
  fi
}

# must PAGE_NAME PATTERN WHY: the rendered page (its dumped DOM) holds
# PATTERN, or the check fails saying WHY.
must() {
  if ! grep -q -- "$2" "$OUT/$1.dom.html"; then
    echo "check-report: $1: $3 (no '$2' in $OUT/$1.dom.html)" >&2
    return 1
  fi
}

if [ $# -gt 0 ]; then
  status=0
  for page in "$@"; do
    check "$page" "$(basename "$(dirname "$page")")-$(basename "$page" .html)" || status=1
  done
  exit $status
fi

cd "$root"
timeout 900 cargo build -q -p arbor-cli
arbor=$root/target/debug/arbor
rm -rf "$OUT/demo" "$OUT/slower" "$OUT/repeat" "$OUT/failed" "$OUT/loads"
timeout 300 "$arbor" run --out "$OUT/demo" --no-progress >"$OUT/demo.txt"
timeout 300 "$arbor" run --out "$OUT/slower" --no-progress --ttft-ms 20 >"$OUT/slower.txt"
tail -1 "$OUT/demo.txt" | grep -q "report.html" || {
  echo "check-report: the run's last line does not name report.html" >&2
  exit 1
}
# Every request fails (exit 4, the server failed the run).
status=0
timeout 300 "$arbor" run --out "$OUT/failed" --no-progress --fail-rate 1 >"$OUT/failed.txt" 2>&1 || status=$?
if [ "$status" != 4 ]; then
  echo "check-report: a run whose every request failed exited $status, not 4" >&2
  exit 1
fi
timeout 60 "$arbor" report "$OUT/demo" "$OUT/slower" -o "$OUT/two-runs.html"
# Twenty loads, given in the shell's order (probe-10 before probe-5).
mkdir -p "$OUT/loads"
for n in $(seq 5 5 100); do
  timeout 120 "$arbor" run --sessions "$n" --loop --cache-bust --duration 1 --grace 1 \
    --out "$OUT/loads/probe-$n" --no-progress >"$OUT/loads-probe-$n.txt" 2>&1
done
timeout 120 "$arbor" report "$OUT"/loads/probe-* -o "$OUT/loads.html"
size=$(wc -c <"$OUT/loads.html")
if [ "$size" -ge 5000000 ]; then
  echo "check-report: the page of 20 runs is $size bytes (budget 5 MB)" >&2
  exit 1
fi
timeout 120 "$arbor" plan testdata/weka-kv-cache-tester --sessions 2 --idle-gap-cap 5 \
  --report "$OUT/plan.html" >"$OUT/plan.txt"
timeout 300 "$arbor" run --repeat 2 --out "$OUT/repeat" --no-progress >"$OUT/repeat.txt" 2>&1
timeout 60 "$arbor" report "$OUT/repeat" >>"$OUT/repeat.txt"
grep -q "the spread of" "$OUT/repeat.txt" || {
  echo "check-report: arbor report of the --repeat directory did not draw its spread" >&2
  exit 1
}
check "$OUT/demo/report.html" demo
must demo 'class="verdict ok"' "the demo's verdict is not first and green"
check "$OUT/failed/report.html" failed
must failed 'class="verdict failed"' "the failed run's verdict does not say it failed"
must failed 'injected server error' "the failed run's page does not show the server's words"
check "$OUT/two-runs.html" two-runs
must two-runs '--ttft-ms 20' "the comparison does not show the setting that differed"
check "$OUT/loads.html" loads
# The runs table in load order: probe-5 first, probe-100 last.
order=$(grep -o '</span>probe-[0-9]*</span></td>' "$OUT/loads.dom.html" | grep -o 'probe-[0-9]*' | head -20 | tr '\n' ' ')
if [ "$order" != "$(for n in $(seq 5 5 100); do printf 'probe-%s ' "$n"; done)" ]; then
  echo "check-report: loads: the runs are not in load order: $order" >&2
  exit 1
fi
must loads 'Against load (sessions)' "the page of 20 loads draws no curve against load"
check "$OUT/plan.html" plan
check "$OUT/repeat/report.html" repeat

# ---- Three replicas without a router (issue 30) --------------------------
# `arbor emulate --replicas 3` on free ports, the demo workload placed
# round-robin over them: the page's replica rows must add up (the page
# checks it) and name the three endpoints.
rm -rf "$OUT/replicas"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$arbor" emulate --replicas 3 --port "$port" >"$OUT/replicas-emulate.txt" 2>&1 &
emulate_pid=$!
trap 'kill $emulate_pid 2>/dev/null || true' EXIT
for _ in $(seq 50); do grep -q "$((port + 2))" "$OUT/replicas-emulate.txt" && break; sleep 0.1; done
timeout 300 "$arbor" run --synthetic "trees=6,turns=6,isl=200,isl_growth=600,osl=20,arrival_s=0.1,seed=3" \
  --tool-time zero --think-time-pct 0 --cache-bust --placement round-robin \
  --endpoint "http://127.0.0.1:$port" --endpoint "http://127.0.0.1:$((port + 1))" \
  --endpoint "http://127.0.0.1:$((port + 2))" --out "$OUT/replicas" --no-progress >"$OUT/replicas.txt" 2>&1
kill $emulate_pid 2>/dev/null || true
check "$OUT/replicas/report.html" replicas
must replicas 'Replicas' "the page of a run over three replicas has no replica section"

# ---- The capacity pages (issue 28, item 4) ------------------------------
# A 20-load sweep on the virtual clock (the batching server model of
# profiles/example.toml, 20 small synthetic trees: under a second) and a
# live search against the built-in emulator under the same profile,
# started from its prediction (3 s a probe, a handful of probes). Each
# page is checked like the others (its title, the log, a hover over its
# first chart); the sweep's must be under 5 MB.
rm -rf "$OUT/capacity-sweep" "$OUT/capacity-live"
timeout 120 "$arbor" capacity --synthetic trees=20,turns=4 --service server:profiles/example.toml \
  --slo 'ttft_p99<=600ms,e2e_p99<=9s,job_p90<=94s' --search sessions:1..20 --sweep \
  -o "$OUT/capacity-sweep" >"$OUT/capacity-sweep.txt" 2>&1
tail -1 "$OUT/capacity-sweep.txt" | grep -q "^report in .*capacity-sweep/report.html$" || {
  echo "check-report: arbor capacity's last line does not name its report.html" >&2
  exit 1
}
sweep_bytes=$(wc -c <"$OUT/capacity-sweep/report.html")
if [ "$sweep_bytes" -ge 5000000 ]; then
  echo "check-report: the 20-load sweep's page is $sweep_bytes bytes, not under 5 MB" >&2
  exit 1
fi
# A sweep of trees with subagents (depth 1): its page draws the load in
# agents and jobs per hour and the Pareto (jobs/h per replica against
# jobs/h per user), and says the answer in agents.
rm -rf "$OUT/capacity-agents"
timeout 120 "$arbor" capacity --synthetic trees=40,turns=4,depth=1,spawn=0.3,seed=5 \
  --service server:profiles/example.toml --slo 'ttft_p99<=1s,job_p90<=180s' \
  --search sessions:1..20 --sweep -o "$OUT/capacity-agents" >"$OUT/capacity-agents.txt" 2>&1
grep -q "^in agents: holds " "$OUT/capacity-agents.txt" || {
  echo "check-report: arbor capacity did not give its answer in agents" >&2
  exit 1
}
timeout 300 "$arbor" capacity --synthetic trees=40,turns=6,isl=600,isl_growth=100,osl=30,depth=0 \
  --tool-time zero --think-time-pct 0 --live --profile profiles/example.toml \
  --service server:profiles/example.toml --cache-bust --sessions 4 --loop --duration 3 \
  --slo 'ttft_p99<=100ms,e2e_p99<=500ms' --search sessions:1..32 --no-progress \
  -o "$OUT/capacity-live" >"$OUT/capacity-live.txt" 2>&1 ||
  # 3 s probes rarely decide a p99 on its 95 % interval: an answer that is
  # only a bound (exit 5) still writes its page, which is what is checked.
  [ $? -eq 5 ]
# Drawn again from the directory, as `arbor report` does.
timeout 60 "$arbor" report "$OUT/capacity-live" >>"$OUT/capacity-live.txt"
grep -q "(capacity: " "$OUT/capacity-live.txt" || {
  echo "check-report: arbor report of the capacity directory did not draw its capacity page" >&2
  exit 1
}
check "$OUT/capacity-sweep/report.html" capacity-sweep
check "$OUT/capacity-live/report.html" capacity-live
check "$OUT/capacity-agents/report.html" capacity-agents
