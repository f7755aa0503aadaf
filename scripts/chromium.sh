# Sourced by scripts that need a headless Chromium (check-report.sh,
# aiperf-check.sh): `chromium_path` prints the path of Debian's
# chromium-headless-shell (or chromium), installing chromium-headless-shell
# with apt-get (sudo when not root) when neither is on PATH. Every apt-get
# step is bounded by `timeout`.

chromium_on_path() {
  for b in chromium-headless-shell chromium; do
    if command -v "$b" >/dev/null 2>&1; then
      command -v "$b"
      return 0
    fi
  done
  return 1
}

chromium_path() {
  if chromium_on_path; then
    return 0
  fi
  echo "$(basename "$0"): installing chromium-headless-shell (apt-get)" >&2
  local sudo_cmd=""
  if [ "$(id -u)" != 0 ]; then sudo_cmd="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  timeout 300 $sudo_cmd apt-get update -qq >&2 || true
  timeout 900 $sudo_cmd apt-get install -y -qq --no-install-recommends chromium-headless-shell >&2
  chromium_on_path
}
