#!/usr/bin/env bash
# CPU-bound background load for checking that the test suite holds on a busy
# machine (issue 16, "A suite that holds under load"): N shell busy loops at
# nice 0 (default one per core, `nproc`), each ended by `timeout` after
# CPULOAD_MAX seconds (default 3600) even if nobody stops it.
#
#   bench/cpuload.sh start [N]       start N loops, pids in $CPULOAD_PIDFILE
#   bench/cpuload.sh stop            end the loops listed in $CPULOAD_PIDFILE
#   bench/cpuload.sh run [N] -- CMD  start, run CMD, stop (also on exit, INT,
#                                    TERM, which also end CMD); exits with
#                                    CMD's status and prints its wall time
#
# CPULOAD_PIDFILE defaults to /tmp/nettune-cpuload.pids for start/stop; `run`
# uses a private one, so it never stops loops someone else started.
set -euo pipefail

max=${CPULOAD_MAX:-3600}
pidfile=${CPULOAD_PIDFILE:-/tmp/nettune-cpuload.pids}

usage() {
  sed -n '7,12p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# Start $1 loops; append "pid starttime" of each `timeout` to $pidfile.
start() {
  local n=$1 i
  case $n in '' | *[!0-9]* | 0) echo "cpuload: N must be a positive integer, got '$n'" >&2; exit 2 ;; esac
  if [ -s "$pidfile" ]; then
    echo "cpuload: $pidfile lists running loops; run '$0 stop' first" >&2
    exit 1
  fi
  : >"$pidfile"
  for ((i = 0; i < n; i++)); do
    # timeout forwards TERM to the loop and exits; the loop ends by itself after $max s.
    nice -n 0 timeout "$max" sh -c 'while :; do :; done' </dev/null >/dev/null 2>&1 &
    # Field 22 of /proc/PID/stat (start time) guards against a reused pid at stop.
    echo "$! $(cut -d' ' -f22 "/proc/$!/stat" 2>/dev/null || echo 0)" >>"$pidfile"
  done
  echo "cpuload: $n busy loop(s) at nice 0 for at most ${max}s (pids $(cut -d' ' -f1 "$pidfile" | tr '\n' ' '); $pidfile)" >&2
}

# End the loops listed in $pidfile (only those still the same processes).
stop() {
  [ -f "$pidfile" ] || { echo "cpuload: no $pidfile, nothing to stop" >&2; return 0; }
  local pid st n=0
  while read -r pid st; do
    [ -n "$pid" ] || continue
    if [ "$(cut -d' ' -f22 "/proc/$pid/stat" 2>/dev/null)" = "$st" ]; then
      kill -TERM "$pid" 2>/dev/null && n=$((n + 1))
    fi
  done <"$pidfile"
  rm -f "$pidfile"
  echo "cpuload: stopped $n busy loop(s)" >&2
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
  start)
    start "${1:-$(nproc)}"
    ;;
  stop)
    stop
    ;;
  run)
    n=$(nproc)
    if [ "${1:-}" != "--" ] && [ $# -gt 0 ]; then n=$1; shift; fi
    [ "${1:-}" = "--" ] || usage
    shift
    [ $# -gt 0 ] || usage
    pidfile=$(mktemp /tmp/nettune-cpuload.XXXXXX)
    rm -f "$pidfile"
    child=
    trap 'stop' EXIT
    # CMD runs in the background so that a signal is handled at once: end
    # CMD, then (EXIT) the loops.
    trap '[ -z "$child" ] || kill -TERM -- "-$child" 2>/dev/null; exit 130' INT
    trap '[ -z "$child" ] || kill -TERM -- "-$child" 2>/dev/null; exit 143' TERM
    start "$n"
    echo "cpuload: $(date -u +%FT%TZ) $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), running: $*" >&2
    t0=$(date +%s.%N)
    # Its own process group (setsid), so a signal ends the whole tree.
    setsid "$@" <&0 &
    child=$!
    rc=0
    wait "$child" || rc=$?
    child=
    t1=$(date +%s.%N)
    echo "cpuload: exit status $rc, wall time $(awk -v a="$t0" -v b="$t1" 'BEGIN { s = b - a; printf "%.1f s (%dm%02ds)", s, s / 60, s % 60 }'), load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
    exit "$rc"
    ;;
  *)
    usage
    ;;
esac
