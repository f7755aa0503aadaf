#!/usr/bin/env bash
# arbor's measurement harness: how much the benchmark client itself lies.
#
#   benches/harness/run.sh [all|error64|error512|overhead|agree|record|streams|threads]...
#
# The client (`arbor run`) and the server (`arbor emulate`, the built-in
# OpenAI-compatible emulator) run as two processes on this machine, on
# 127.0.0.1 only. The emulator stamps each request's receipt and each
# chunk's write on CLOCK_MONOTONIC, keyed by the `x-arbor-request-id`
# header the client sends; `GET /arbor/stamps?drain=1` hands them over.
#
# Scenarios (each runnable alone; every load is bounded in request count by
# its workload and in time by --duration):
#
#   error64, error512   Client timing error, each twice: lanes spread evenly
#                       over one request duration (`--arrival rate:3N/4`, a
#                       steady benchmark) and in lockstep (all start at 0:
#                       bursts of N sends and N chunks at once, worst case).
#                       Emulator: TTFT 50 ms, ITL 20 ms.
#                       Workload: 5 trees per lane x 4 chained turns, 32-token
#                       prompts, 64-token outputs, zero gaps; `--sessions N`
#                       (N = 64 or 512) holds N streams back to back for
#                       ~27 s. Joins records.jsonl with the stamps:
#                       error_ttft = client TTFT - server TTFT,
#                       error_itl = client chunk gap - server chunk gap;
#                       plus lateness_s (sent - eligible) from the records.
#   overhead            Client cost against a zero-latency emulator: short
#                       requests (16 output tokens) and long ones (1024
#                       output tokens) at concurrency 1, 64 and 512, and a
#                       single request (the fixed cost). The client runs
#                       under launch.py, which reads its user+sys CPU and
#                       peak RSS with wait4 (as /usr/bin/time -v does) and
#                       its launch-to-first-request time from the stamps.
#                       CPU is divided by requests or tokens; nothing is
#                       subtracted. Concurrency held comes from the records.
#                       The concurrency-1 cases run again against an
#                       emulator with --busy-poll (rows *-polled): on
#                       loopback waking a sleeping server is charged to the
#                       client that sends to it.
#   record              The recording proxy's added latency (`arbor record`,
#                       docs/record.md): the error64 spread load (64
#                       streams, TTFT 50 ms, ITL 20 ms) twice against one
#                       emulator, directly and through the proxy. Each
#                       row's error_ttft is client TTFT - server TTFT of the
#                       same request, so the proxy adds the difference of
#                       the two rows' p50 and p99 (target: p99 <= 1 ms).
#                       Also the proxy's CPU (user+sys, /proc) per request.
#                       Prints one table for docs/performance.md ("The
#                       recording proxy"): p50 and p99 direct, through the
#                       proxy and their difference, and the CPU line.
#                       HARNESS_RECORD_STREAMS (default 64) and
#                       HARNESS_RECORD_TREES (trees per lane, default 5)
#                       shrink it for a smoke run. Not part of `all`.
#   agree               Virtual against live: `arbor plan --timeline` with
#                       `--service fixed:20:1` against `arbor run` with
#                       `arbor emulate --ttft-ms 20 --itl-ms 1` on the Weka
#                       fixture trace_0277 (5 agents, 53 turns) and on the
#                       whole Weka fixture directory, `--tool-time max:200
#                       --think-time-pct 1`. Per turn: |live sent - planned
#                       start| and the live lateness (sent - eligible).
#   streams             Concurrent streams one client process holds
#                       (docs/performance.md, "Scale"): N lanes
#                       (HARNESS_STREAMS, default 10000) of one 1-turn tree
#                       each, 30 output tokens at ITL 1 s (TTFT 50 ms), the
#                       lanes started over 5 s (--arrival rate:N/5), so all
#                       N streams are open together for about 25 s; one
#                       client thread (--threads 1). The emulator is its own
#                       process, so the client's peak RSS (wait4) is its
#                       own: memory per stream = (peak RSS at N - peak RSS
#                       of one stream) / (N - 1), target <= 20 kB. Errors by
#                       class from the records (target: no connect error).
#                       arbor raises its soft fd limit to the hard one
#                       in-process; a hard limit below N + 128 cannot be
#                       raised without privileges, so the scenario runs
#                       what fits and says so. Not part of `all`.
#   threads             `--threads 2` against `--threads 1` (one
#                       process, docs/scale-out.md): the client's CPU per
#                       short request (the overhead scenario's short-c64:
#                       1920 trees x 32 turns of 16 tokens, 64 lanes,
#                       zero-latency emulator) and the timing error (the
#                       error64 spread load, stamps joined by request id).
#                       HARNESS_SMALL=1 shrinks both to seconds (to prove
#                       they run). Not part of `all`.
#
# Every scenario but `threads` runs the client with --threads 1 (one loop,
# the figures this file has always measured); THREADS=N overrides it.
#
# Output: markdown tables on stdout; raw files (records, stamps, usage,
# JSON reports) under $HARNESS_OUT (default /tmp/arbor-harness).
# Environment: CARGO_TARGET_DIR (default /work/target-harness),
# HARNESS_PORT (default 18431), HARNESS_NO_BUILD=1 to skip the build,
# HARNESS_UI=dashboard (or simple) to run every client with that --ui
# instead of --no-progress, its stderr a 200x50 pseudo-terminal (launch.py
# --pty; docs/performance.md, "The dashboard's cost"),
# HARNESS_TLS=1 to run every scenario over https: the emulator serves a
# self-signed certificate (`arbor emulate --tls-self-signed`, its PEM at
# $HARNESS_OUT/emulator-cert.pem) and the client trusts it with --cacert.
# Compare a run with HARNESS_TLS=1 against one without (use two
# HARNESS_OUT directories) for the cost of TLS.
# Whole harness: about 5 minutes on 2 vCPUs (plus the build).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
TARGET="${CARGO_TARGET_DIR:-/work/target-harness}"
ARBOR="$TARGET/release/arbor"
OUT="${HARNESS_OUT:-/tmp/arbor-harness}"
PORT="${HARNESS_PORT:-18431}"
if [[ "${HARNESS_TLS:-0}" == 1 ]]; then
    CERT="$OUT/emulator-cert.pem"
    URL="https://127.0.0.1:$PORT"
    EMU_TLS=(--tls-self-signed --tls-cert-out "$CERT")
    TRUST=(--cacert "$CERT")
else
    URL="http://127.0.0.1:$PORT"
    EMU_TLS=()
    TRUST=()
fi
EMU_PID=""

log() { echo "# $*" >&2; }

build() {
    if [[ "${HARNESS_NO_BUILD:-0}" != 1 ]]; then
        log "building release binaries in $TARGET"
        (cd "$ROOT" && CARGO_TARGET_DIR="$TARGET" cargo build --release -q -p arbor-cli -p arbor-benches)
    fi
    [[ -x "$ARBOR" ]] || { echo "no $ARBOR" >&2; exit 1; }
}

stop_emulator() {
    if [[ -n "$EMU_PID" ]]; then
        kill -INT "$EMU_PID" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$EMU_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$EMU_PID" 2>/dev/null || true
        wait "$EMU_PID" 2>/dev/null || true
        EMU_PID=""
    fi
}
trap stop_emulator EXIT
trap 'exit 130' INT TERM

# start_emulator NAME [emulator flags...]
start_emulator() {
    local name="$1"; shift
    stop_emulator
    "$ARBOR" emulate --port "$PORT" --max-model-len 1000000 "${EMU_TLS[@]}" "$@" >"$OUT/$name.emulator.log" 2>&1 &
    EMU_PID=$!
    for _ in $(seq 100); do
        if curl -sf "${TRUST[@]}" "$URL/health" >/dev/null 2>&1; then return 0; fi
        kill -0 "$EMU_PID" 2>/dev/null || break
        sleep 0.05
    done
    echo "emulator did not start; see $OUT/$name.emulator.log" >&2
    exit 1
}

# client NAME [--stamps] -- arbor run arguments (input first)...
# Runs `arbor run` against the emulator under launch.py.
client() {
    local name="$1"; shift
    local stamps=()
    if [[ "$1" == --stamps ]]; then stamps=(--stamps "$OUT/$name.stamps.json"); shift; fi
    [[ "$1" == -- ]] && shift
    rm -rf "$OUT/$name.run"
    # HARNESS_UI=dashboard|simple: that --ui, drawn on a 200x50 pty.
    local ui=(--no-progress) pty=()
    if [[ -n "${HARNESS_UI:-}" ]]; then ui=(--ui "$HARNESS_UI"); pty=(--pty 200x50 --thread arbor-dashboard); fi
    python3 "$HERE/launch.py" --emulator "$URL" --emulator-pid "$EMU_PID" --usage "$OUT/$name.usage.json" \
        --stdout "$OUT/$name.client.log" "${stamps[@]}" "${TRUST[@]}" "${pty[@]}" -- \
        "$ARBOR" run "$@" --threads "${THREADS:-1}" --endpoint "${CLIENT_URL:-$URL}" "${TRUST[@]}" "${ui[@]}" --out "$OUT/$name.run"
}

workload() { # NAME TREES TURNS OSL
    python3 "$HERE/workload.py" "$OUT/$1.jsonl" --trees "$2" --turns "$3" --isl 32 --osl "$4"
}

# error_scenario STREAMS MODE: MODE "spread" starts the lanes evenly over one
# request's duration (--arrival rate:N/1.33s), so streams are in every phase
# as in a steady benchmark; "lockstep" starts them all at 0, so the identical
# requests of all lanes start, stream and end together (the worst case: bursts
# of N sends and N chunks at once).
error_scenario() {
    local n="$1" mode="$2" name="error$1-$2"
    local arrival=()
    [[ "$mode" == spread ]] && arrival=(--arrival "rate:$((n * 3 / 4))")
    log "$name: $n streams ($mode), TTFT 50 ms, ITL 20 ms, 64-token outputs, ~27 s"
    workload "$name" $((n * 5)) 4 64
    start_emulator "$name" --ttft-ms 50 --itl-ms 20
    client "$name" --stamps -- "$OUT/$name.jsonl" --format arbor \
        --sessions "$n" "${arrival[@]}" --duration 60 --grace 5
    stop_emulator
    python3 "$HERE/analyze.py" error "$OUT/$name.run/records.jsonl" "$OUT/$name.stamps.json" \
        "$OUT/$name.usage.json" --name "$name" --json "$OUT/$name.report.json" >"$OUT/$name.row.md"
    rm -f "$OUT/$name.stamps.json.gz"; gzip -f "$OUT/$name.stamps.json"
}

overhead_scenario() {
    start_emulator overhead
    # name trees turns osl sessions
    local cases=(
        "fixed      1     1   16 1"
        "short-c1   5000  4   16 1"
        "short-c64  1920  32  16 64"
        "short-c512 3072  20  16 512"
        "long-c1    500   4 1024 1"
        "long-c64   512   8 1024 64"
        "long-c512  1024  4 1024 512"
    )
    : >"$OUT/overhead.rows.md"
    for c in "${cases[@]}"; do
        read -r name trees turns osl sessions <<<"$c"
        log "overhead $name: $((trees * turns)) requests of $osl tokens, $sessions lanes"
        workload "ovh-$name" "$trees" "$turns" "$osl"
        client "ovh-$name" --stamps -- "$OUT/ovh-$name.jsonl" --format arbor \
            --sessions "$sessions" --duration 120 --grace 5
        python3 "$HERE/analyze.py" overhead "$OUT/ovh-$name.run/records.jsonl" \
            "$OUT/ovh-$name.usage.json" --name "$name" \
            --json "$OUT/ovh-$name.report.json" >>"$OUT/overhead.rows.md"
        rm -f "$OUT/ovh-$name.stamps.json"
    done
    # Concurrency 1 again against a polling emulator: on loopback the kernel
    # charges waking a sleeping server to the client that sends to it.
    start_emulator overhead-polled --busy-poll
    for name in short-c1 long-c1; do
        log "overhead $name-polled: the emulator polls (--busy-poll)"
        client "ovh-$name-polled" --stamps -- "$OUT/ovh-$name.jsonl" --format arbor \
            --sessions 1 --duration 120 --grace 5
        python3 "$HERE/analyze.py" overhead "$OUT/ovh-$name-polled.run/records.jsonl" \
            "$OUT/ovh-$name-polled.usage.json" --name "$name-polled" \
            --json "$OUT/ovh-$name-polled.report.json" >>"$OUT/overhead.rows.md"
        rm -f "$OUT/ovh-$name-polled.stamps.json"
    done
    stop_emulator
}

# streams_scenario: how many streams one client process holds, and its
# memory per stream (see the header).
streams_scenario() {
    local n="${HARNESS_STREAMS:-10000}" osl=30 hard
    hard="$(ulimit -Hn)"
    if [[ "$hard" != unlimited ]] && (( hard < n + 128 )); then
        log "streams: the hard fd limit is $hard: arbor raises its soft limit to it in-process and no further without privileges (ulimit -Hn as root, or LimitNOFILE=); running $((hard - 128)) streams instead of $n"
        n=$((hard - 128))
    fi
    log "streams: $n streams at once, TTFT 50 ms, ITL 1 s, $osl tokens each, ~40 s"
    workload streams-base 1 1 "$osl"
    workload "streams-$n" "$n" 1 "$osl"
    start_emulator streams --ttft-ms 50 --itl-ms 1000
    client streams-base -- "$OUT/streams-base.jsonl" --format arbor --sessions 1 \
        --duration 600 --grace 5
    client "streams-$n" -- "$OUT/streams-$n.jsonl" --format arbor --sessions "$n" \
        --arrival "rate:$(( (n + 4) / 5 ))" --duration 600 --grace 5
    stop_emulator
    python3 "$HERE/analyze.py" streams "$OUT/streams-$n.run/records.jsonl" \
        "$OUT/streams-$n.usage.json" "$OUT/streams-base.usage.json" --fd-hard "$hard" \
        --name "streams-$n" --json "$OUT/streams.report.json" >"$OUT/streams.row.md"
}

# threads_scenario: CPU per short request and timing error, --threads 1
# against --threads 2 (see the header).
threads_scenario() {
    local trees=1920 duration=120 n=64
    [[ "${HARNESS_SMALL:-0}" == 1 ]] && trees=64 && duration=8
    workload thr-short "$trees" 32 16
    : >"$OUT/threads.overhead.md"
    : >"$OUT/threads.error.md"
    for t in 1 2; do
        log "threads $t: $((trees * 32)) short requests (16 tokens), 64 lanes, zero-latency emulator"
        start_emulator "thr-short-t$t"
        THREADS=$t client "thr-short-t$t" -- "$OUT/thr-short.jsonl" --format arbor \
            --sessions 64 --duration "$duration" --grace 5
        python3 "$HERE/analyze.py" overhead "$OUT/thr-short-t$t.run/records.jsonl" \
            "$OUT/thr-short-t$t.usage.json" --name "short-c64 --threads $t" \
            --json "$OUT/thr-short-t$t.report.json" >>"$OUT/threads.overhead.md"
        log "threads $t: $n streams (spread), TTFT 50 ms, ITL 20 ms, 64-token outputs"
        workload "thr-error-t$t" $((n * 5)) 4 64
        start_emulator "thr-error-t$t" --ttft-ms 50 --itl-ms 20
        THREADS=$t client "thr-error-t$t" --stamps -- "$OUT/thr-error-t$t.jsonl" --format arbor \
            --sessions "$n" --arrival "rate:$((n * 3 / 4))" --duration "$duration" --grace 5
        python3 "$HERE/analyze.py" error "$OUT/thr-error-t$t.run/records.jsonl" \
            "$OUT/thr-error-t$t.stamps.json" "$OUT/thr-error-t$t.usage.json" \
            --name "error64-spread --threads $t" \
            --json "$OUT/thr-error-t$t.report.json" >>"$OUT/threads.error.md"
        rm -f "$OUT/thr-short-t$t.stamps.json"; gzip -f "$OUT/thr-error-t$t.stamps.json"
    done
    stop_emulator
}

# record_scenario: the error64 spread load directly and through `arbor
# record` (listening on PORT+1, its capture in $OUT/record.capture.jsonl).
record_scenario() {
    local n="${HARNESS_RECORD_STREAMS:-64}" per="${HARNESS_RECORD_TREES:-5}"
    local proxy_url="http://127.0.0.1:$((PORT + 1))" rec_pid
    log "record: $n streams ($per trees each), TTFT 50 ms, ITL 20 ms, directly then through arbor record"
    workload record $((n * per)) 4 64
    start_emulator record --ttft-ms 50 --itl-ms 20
    log "record-direct: $n streams straight to the emulator"
    client record-direct --stamps -- "$OUT/record.jsonl" --format arbor \
        --sessions "$n" --arrival "rate:$((n * 3 / 4))" --duration 60 --grace 5
    "$ARBOR" record --upstream "$URL" "${TRUST[@]}" --listen "127.0.0.1:$((PORT + 1))" \
        -o "$OUT/record.capture.jsonl" >"$OUT/record.proxy.log" 2>&1 &
    rec_pid=$!
    for _ in $(seq 100); do
        curl -sf "$proxy_url/health" >/dev/null 2>&1 && break
        sleep 0.05
    done
    # utime + stime of the proxy process (all its threads), in clock ticks,
    # counted from here (its start-up is not a request's).
    local ticks ticks0
    ticks0=$(awk '{print $14 + $15}' "/proc/$rec_pid/stat")
    log "record-proxy: $n streams through arbor record"
    CLIENT_URL="$proxy_url" client record-proxy --stamps -- "$OUT/record.jsonl" --format arbor \
        --sessions "$n" --arrival "rate:$((n * 3 / 4))" --duration 60 --grace 5
    ticks=$(( $(awk '{print $14 + $15}' "/proc/$rec_pid/stat") - ticks0 ))
    kill -INT "$rec_pid" 2>/dev/null || true
    wait "$rec_pid" 2>/dev/null || true
    stop_emulator
    local lines
    lines=$(grep -c . "$OUT/record.capture.jsonl" || true)
    for via in direct proxy; do
        python3 "$HERE/analyze.py" error "$OUT/record-$via.run/records.jsonl" "$OUT/record-$via.stamps.json" \
            "$OUT/record-$via.usage.json" --name "record-$via" \
            --json "$OUT/record-$via.report.json" >"$OUT/record-$via.row.md"
        rm -f "$OUT/record-$via.stamps.json.gz"; gzip -f "$OUT/record-$via.stamps.json"
    done
    python3 "$HERE/analyze.py" record "$OUT/record-direct.report.json" "$OUT/record-proxy.report.json" \
        --cpu-ticks "$ticks" --hz "$(getconf CLK_TCK)" --requests "$lines" \
        --json "$OUT/record.report.json" >"$OUT/record.table.md"
    cat "$OUT/record-direct.row.md" "$OUT/record-proxy.row.md" >"$OUT/record.rows.md"
}

agree_scenario() {
    local policy=(--tool-time max:200 --think-time-pct 1)
    : >"$OUT/agree.rows.md"; : >"$OUT/agree.parts.md"
    for c in "trace_0277 testdata/weka-kv-cache-tester/trace_0277.json" \
             "weka-dir testdata/weka-kv-cache-tester"; do
        read -r name input <<<"$c"
        log "agree $name: plan --service fixed:20:1 against run with emulate --ttft-ms 20 --itl-ms 1"
        (cd "$ROOT" && "$ARBOR" plan "$input" "${policy[@]}" --service fixed:20:1 \
            --timeline "$OUT/agree-$name.timeline.jsonl" >"$OUT/agree-$name.plan.txt")
        start_emulator "agree-$name" --ttft-ms 20 --itl-ms 1
        client "agree-$name" --stamps -- "$ROOT/$input" "${policy[@]}" --service fixed:20:1 --duration 120 --grace 5
        stop_emulator
        python3 "$HERE/analyze.py" agree "$OUT/agree-$name.timeline.jsonl" \
            "$OUT/agree-$name.run/records.jsonl" "$OUT/agree-$name.usage.json" --name "$name" \
            --stamps "$OUT/agree-$name.stamps.json" \
            --json "$OUT/agree-$name.report.json" >>"$OUT/agree.rows.md"
        python3 "$HERE/analyze.py" agree "$OUT/agree-$name.timeline.jsonl" \
            "$OUT/agree-$name.run/records.jsonl" "$OUT/agree-$name.usage.json" --name "$name" \
            --stamps "$OUT/agree-$name.stamps.json" --parts >>"$OUT/agree.parts.md"
    done
}

print_tables() {
    local rows
    rows=$(cat "$OUT"/error{64,512}-{spread,lockstep}.row.md 2>/dev/null || true)
    if [[ -n "$rows" ]]; then
        printf '\nClient timing error (error = client - server, same request or chunk)\n\n'
        python3 "$HERE/analyze.py" header error
        echo "$rows"
    fi
    if [[ -s "$OUT/overhead.rows.md" ]]; then
        printf '\nClient overhead against a zero-latency emulator (client user+sys CPU, nothing subtracted)\n\n'
        python3 "$HERE/analyze.py" header overhead
        cat "$OUT/overhead.rows.md"
    fi
    if [[ -s "$OUT/record.rows.md" ]]; then
        printf '\nThe recording proxy: TTFT error direct and through arbor record\n\n'
        python3 "$HERE/analyze.py" header error
        cat "$OUT/record.rows.md"
        printf '\nThe recording proxy (docs/performance.md)\n\n'
        cat "$OUT/record.table.md"
    fi
    if [[ -s "$OUT/agree.rows.md" ]]; then
        printf '\nVirtual (arbor plan) against live (arbor run + emulator)\n\n'
        python3 "$HERE/analyze.py" header agree
        cat "$OUT/agree.rows.md"
        printf '\nEach turn'"'"'s own addition to the drift (with the emulator'"'"'s stamps)\n\n'
        python3 "$HERE/analyze.py" header agree-parts
        cat "$OUT/agree.parts.md"
    fi
    if [[ -s "$OUT/streams.row.md" ]]; then
        printf '\nConcurrent streams one client process holds (ITL 1 s; the emulator in its own process)\n\n'
        python3 "$HERE/analyze.py" header streams
        cat "$OUT/streams.row.md"
    fi
    if [[ -s "$OUT/threads.overhead.md" ]]; then
        printf '\n--threads 2 against --threads 1: client CPU per short request\n\n'
        python3 "$HERE/analyze.py" header overhead
        cat "$OUT/threads.overhead.md"
        printf '\n--threads 2 against --threads 1: client timing error\n\n'
        python3 "$HERE/analyze.py" header error
        cat "$OUT/threads.error.md"
    fi
}

main() {
    local scenarios=("$@")
    [[ ${#scenarios[@]} -eq 0 || "${scenarios[0]}" == all ]] && scenarios=(error64 error512 overhead agree)
    for s in "${scenarios[@]}"; do
        case "$s" in
            error64|error512|overhead|agree|record|streams|threads) ;;
            *) echo "unknown scenario $s (error64, error512, overhead, agree, record, streams, threads, all)" >&2; exit 2 ;;
        esac
    done
    mkdir -p "$OUT"
    build
    for s in "${scenarios[@]}"; do
        case "$s" in
            error64|error512)
                rm -f "$OUT/$s"-*.row.md
                error_scenario "${s#error}" spread
                error_scenario "${s#error}" lockstep ;;
            overhead) overhead_scenario ;;
            agree) agree_scenario ;;
            record) record_scenario ;;
            streams) streams_scenario ;;
            threads) threads_scenario ;;
        esac
    done
    log "machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
    print_tables
}

main "$@"
