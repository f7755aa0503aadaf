# Sourced by the measuring scripts (scripts/calibrate-llama.sh,
# scripts/accuracy-llama.sh), after boost.sh: `serve_llama PORT PARALLEL
# N_CTX LOG` starts llama.cpp's C++ llama-server (start-cpp.sh) boosted on
# 127.0.0.1:PORT with PARALLEL slots and N_CTX tokens of KV, its output in
# LOG, stops it when the calling script exits (an EXIT trap), and returns
# once /health answers (fails after 60 s).
serve_llama() {
  local port=$1 parallel=$2 n_ctx=$3 log=$4
  local here
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  llama_pidfile=$(mktemp)
  PORT=$port PARALLEL=$parallel N_CTX=$n_ctx PIDFILE=$llama_pidfile \
    boosted -b bash "$here/start-cpp.sh" >"$log" 2>&1 &
  trap stop_llama EXIT
  for _ in $(seq 1 120); do
    curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  curl -sf "http://127.0.0.1:$port/health" >/dev/null
}

# Stops the server serve_llama started (its PID file).
stop_llama() {
  local pid
  pid=$(cat "$llama_pidfile" 2>/dev/null || true)
  [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
  rm -f "$llama_pidfile"
}
