# Sourced by the measuring scripts (scripts/calibrate-*.sh): `boosted CMD...`
# runs CMD at a higher priority than the machine's other work, so what it
# measures is the server, not the scheduler.
#
# `nice` alone is not enough on a kernel with autogroup scheduling
# (/proc/sys/kernel/sched_autogroup_enabled = 1, the default of most
# distributions): CPU time is shared fairly between sessions first, and a
# process's nice value only ranks it inside its own session. So CMD runs in
# a session of its own (setsid) whose autogroup gets nice -10 (root only;
# elsewhere it silently keeps 0), and at nice -10 itself. Measured here with
# five other sessions compiling: llama-server's prefill went from 29 to 160
# tokens/s and its decode from 1.3 to 50 tokens/s.
#
# `boosted -b CMD...` starts CMD in the background (the caller's `$!` is then
# setsid's PID, not CMD's: have CMD write its own PID file).
boosted() {
  local wait=-w
  if [ "${1:-}" = -b ]; then
    wait=
    shift
  fi
  # shellcheck disable=SC2016
  setsid $wait bash -c 'echo -10 >"/proc/$$/autogroup" 2>/dev/null || true; exec nice -n -10 "$@"' boosted "$@"
}
