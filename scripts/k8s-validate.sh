#!/usr/bin/env bash
# Validate every deploy/k8s/*.yaml offline against Kubernetes' published
# OpenAPI schemas (the PyPI package kubernetes-validate ships them), in
# strict mode (unknown fields are errors), for a pinned Kubernetes version.
#
# The package is installed once into a cached venv
# (${ARBOR_K8S_VENV:-~/.cache/arbor-k8s-venv}); later runs need no network.
# Usage: scripts/k8s-validate.sh [KUBERNETES_VERSION]
set -euo pipefail
cd "$(dirname "$0")/.."

# Pinned: the schemas' Kubernetes version and the validator's own version.
K8S_VERSION="${1:-1.31.0}"
VALIDATOR="kubernetes-validate==1.37.0"
VENV="${ARBOR_K8S_VENV:-$HOME/.cache/arbor-k8s-venv}"

if ! "$VENV/bin/kubernetes-validate" --version 2>/dev/null | grep -qx "${VALIDATOR#*==}"; then
    rm -rf "$VENV"
    if ! python3 -m venv "$VENV" >/dev/null 2>&1; then
        # A fresh Debian has python3 without its venv module.
        echo "k8s-validate: installing python3-venv (apt-get)" >&2
        sudo_cmd=""
        [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
        export DEBIAN_FRONTEND=noninteractive
        timeout 300 $sudo_cmd apt-get update -qq >&2 || true
        timeout 600 $sudo_cmd apt-get install -y -qq --no-install-recommends python3-venv >&2
        rm -rf "$VENV"
        python3 -m venv "$VENV"
    fi
    "$VENV/bin/pip" install --quiet --disable-pip-version-check "$VALIDATOR"
fi

shopt -s nullglob
files=(deploy/k8s/*.yaml)
if [ ${#files[@]} -eq 0 ]; then
    echo "k8s-validate: no deploy/k8s/*.yaml" >&2
    exit 1
fi
"$VENV/bin/kubernetes-validate" --strict --kubernetes-version "$K8S_VERSION" "${files[@]}"
