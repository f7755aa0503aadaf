#!/usr/bin/env bash
# A sharded run on one box (docs/scale-out.md, "On one box"): one
# `arbor emulate`, N `arbor run --shard I/N` processes meeting at the start
# barrier (rank 0 listens, the others connect), then `arbor merge` of the
# N run directories.
#
#   scripts/shard-local.sh N [OUT_DIR] [-- ARBOR_RUN_FLAGS...]
#
# OUT_DIR (default: a fresh temporary directory) gets shard-0 .. shard-N-1,
# merged/ and the emulator's log. The run flags default to a small
# synthetic workload under --sessions; give your own after `--` (an input
# path, policy flags). Environment:
#   ARBOR         the arbor binary (default: built with `cargo build`, the
#                 dev profile; give a release binary for measurements)
#   PORT          the emulator's port (default 18000)
#   BARRIER_PORT  rank 0's barrier port (default 18001)
# Exit 0 when every shard and the merge succeed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)

usage() { echo "usage: $0 N [OUT_DIR] [-- ARBOR_RUN_FLAGS...]" >&2; exit 2; }
[ $# -ge 1 ] || usage
n=$1; shift
case $n in ''|*[!0-9]*) usage ;; esac
[ "$n" -ge 1 ] || usage
out=""
if [ $# -ge 1 ] && [ "$1" != "--" ]; then out=$1; shift; fi
[ -n "$out" ] || out=$(mktemp -d)/shard-local
if [ $# -ge 1 ]; then [ "$1" = "--" ] || usage; shift; fi
if [ $# -ge 1 ]; then
    run_flags=("$@")
else
    run_flags=(--synthetic "trees=24,turns=6,depth=1,spawn=0.2,fanout=2,seed=7"
               --sessions 8 --tool-time zero --think-time-pct 0)
fi
port=${PORT:-18000}
barrier_port=${BARRIER_PORT:-18001}

if [ -z "${ARBOR:-}" ]; then
    cargo build -q -p arbor-cli --manifest-path "$root/Cargo.toml"
    ARBOR="$root/target/debug/arbor"
fi
mkdir -p "$out"

pids=()
emulator=""
cleanup() {
    # Only the processes this script started, by their ids.
    for pid in "${pids[@]}" $emulator; do kill "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT

"$ARBOR" emulate --port "$port" --ttft-ms 20 --itl-ms 1 >"$out/emulator.log" 2>&1 &
emulator=$!
for _ in $(seq 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
    sleep 0.1
done

for i in $(seq 0 $((n - 1))); do
    if [ "$i" = 0 ]; then
        barrier=(--barrier-listen "127.0.0.1:$barrier_port" --barrier-size "$n")
    else
        barrier=(--barrier "127.0.0.1:$barrier_port")
    fi
    "$ARBOR" run "${run_flags[@]}" --endpoint "http://127.0.0.1:$port" \
        --shard "$i/$n" "${barrier[@]}" --barrier-timeout 60s \
        --no-progress --force -o "$out/shard-$i" >"$out/shard-$i.log" 2>&1 &
    pids+=($!)
done

failed=0
for i in "${!pids[@]}"; do
    if ! wait "${pids[$i]}"; then
        echo "shard $i/$n failed; its log: $out/shard-$i.log" >&2
        tail -n 5 "$out/shard-$i.log" >&2
        failed=1
    fi
done
pids=()
[ "$failed" = 0 ] || exit 1

shards=()
for i in $(seq 0 $((n - 1))); do shards+=("$out/shard-$i"); done
for i in $(seq 0 $((n - 1))); do
    echo "shard $i/$n: $(wc -l <"$out/shard-$i/records.jsonl") records"
done
"$ARBOR" merge "${shards[@]}" -o "$out/merged"
echo "merged: $out/merged ($(wc -l <"$out/merged/records.jsonl") records)"
