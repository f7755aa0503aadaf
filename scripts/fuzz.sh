#!/usr/bin/env bash
# Runs one of arbor's coverage-guided fuzz targets with AFL++ (cargo-afl,
# stable Rust) for SECONDS (default 300), at the lowest CPU priority.
#
#   scripts/fuzz.sh TARGET [SECONDS]
#
# TARGET: loaders | sse | http_response | barrier (inputs and the wire)
#         records | summary | run_json | repeat_json (the run directory's readers)
#
# Installs cargo-afl and builds AFL++'s runtime when they are missing
# (needs a C compiler and llvm-config), builds fuzz/ (not a workspace
# member), seeds the target from testdata/ and fuzz/seeds/TARGET, and
# fuzzes into fuzz/out/TARGET (afl-fuzz's own layout: queue/, crashes/,
# hangs/, fuzzer_stats). A crash found is in fuzz/out/TARGET/default/crashes/;
# replay one with `fuzz/target/debug/TARGET < FILE`, minimize it with
# `cargo afl tmin -i FILE -o min -- fuzz/target/debug/TARGET`.
# See docs/testing.md, "Fuzzing".
set -euo pipefail

target="${1:?usage: scripts/fuzz.sh loaders|sse|http_response|barrier|records|summary|run_json|repeat_json [SECONDS]}"
seconds="${2:-300}"
case "$target" in
  loaders | sse | http_response | barrier | records | summary | run_json | repeat_json) ;;
  *)
    echo "unknown target \`$target\`: loaders, sse, http_response, barrier, records, summary," \
      "run_json or repeat_json" >&2
    exit 2
    ;;
esac
root="$(cd "$(dirname "$0")/.." && pwd)"
fuzz="$root/fuzz"

if ! cargo afl --version >/dev/null 2>&1; then
  cargo install cargo-afl --locked
fi
# Builds AFL++ for this rustc once; says so (and fails) when it already is.
cargo afl config --build >/dev/null 2>&1 || true

(cd "$fuzz" && nice -n 19 cargo afl build --bin "$target")

seeds="$fuzz/out/seeds-$target"
rm -rf "$seeds"
mkdir -p "$seeds"
if [ -d "$fuzz/seeds/$target" ]; then
  cp "$fuzz/seeds/$target"/* "$seeds"/
fi
if [ "$target" = loaders ]; then
  # Every small input file of testdata/, good and bad, behind the byte
  # that picks detection by content (past the end of FORMATS).
  n=0
  while IFS= read -r -d '' file; do
    n=$((n + 1))
    { printf '\377'; cat "$file"; } >"$seeds/testdata-$n"
  done < <(find "$root/testdata" -type f -size -64k \
    \( -name '*.json' -o -name '*.jsonl' -o -name '*.zst' \) \
    -not -path '*/golden/plan/*' -print0 | sort -z)
fi
# The run directory's readers: every file of that name in testdata/ too,
# behind the byte that says whether end.json is there (records, run_json;
# both ways) or as it is (summary).
case "$target" in
  records | run_json | summary)
    case "$target" in
      records) name=records.jsonl ;;
      run_json) name=run.json ;;
      summary) name=summary.json ;;
    esac
    n=0
    while IFS= read -r -d '' file; do
      n=$((n + 1))
      if [ "$target" = summary ]; then
        cp "$file" "$seeds/testdata-$n"
      else
        { printf '\000'; cat "$file"; } >"$seeds/testdata-$n-no-end"
        { printf '\001'; cat "$file"; } >"$seeds/testdata-$n-end"
      fi
    done < <(find "$root/testdata" -type f -name "$name" -size -64k -print0 | sort -z)
    ;;
esac

export AFL_SKIP_CPUFREQ=1
export AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1
export AFL_NO_UI=1
exec nice -n 19 cargo afl fuzz -V "$seconds" -i "$seeds" -o "$fuzz/out/$target" \
  "$fuzz/target/debug/$target"
