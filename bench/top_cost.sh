#!/usr/bin/env bash
# CPU cost of `nettune top` and of the 1 Hz sampling `doctor --sample` does,
# as a % of one CPU (issue 10: the goal is under 1 %).
#
#   bench/top_cost.sh [SECONDS] [BINARY]       default 60 s, target/release/nettune
#
# top needs a terminal, so it runs in a detached tmux pane (120x40). Its cost
# is read from /proc/PID/task/*/schedstat (ns on CPU, every thread) and from
# /proc/PID/stat utime+stime (ticks) at the start and end of the window,
# after a 2 s warm-up, so start-up (snapshot, terminal set-up) is left out.
# The CPU time of reaped children (top's `ethtool -S` per NIC with queues per
# interval) is cutime+cstime of /proc/PID/stat and is added in the last column.
# The doctor sampling is the same sampler at 1 Hz: `nettune stat --interval 1
# --no-nic-stats` (doctor reads no driver counters) with stdout on /dev/null,
# measured the same way. When the binary has a
# `doctor` command, `doctor --sample SECONDS` is measured as a whole process
# too (wait4 rusage, bench/cpu_cost.py: start-up, snapshot and rules included).
#
# Prints one markdown table row per measurement. Bounded: every process is
# stopped at the end of its window; tmux sessions are named nt-cost-$$.
set -euo pipefail
secs=${1:-60}
bin=${2:-target/release/nettune}
warm=2
here=$(cd "$(dirname "$0")" && pwd)
[ -x "$bin" ] || { echo "no binary at $bin (cargo build --release -p nettune)" >&2; exit 1; }
command -v tmux >/dev/null || { echo "tmux is needed (apt-get install -y tmux)" >&2; exit 1; }
hz=$(getconf CLK_TCK)
sess="nt-cost-$$"

# ns on CPU of every thread of $1, and utime+stime ticks of the process.
# (A thread may end between the glob and the read: its file is then skipped.)
cpu_ns() { { cat /proc/"$1"/task/*/schedstat 2>/dev/null || true; } | awk '{s += $1} END {printf "%d", s}'; }
cpu_ticks() { awk '{print $14 + $15}' /proc/"$1"/stat; }
# utime+stime ticks of its reaped children (top's `ethtool -S` runs).
child_ticks() { awk '{print $16 + $17}' /proc/"$1"/stat; }

# measure PID LABEL: sample the counters over $secs seconds and print a row.
measure() {
  local pid=$1 label=$2 n0 t0 c0 w0 n1 t1 c1 w1
  sleep "$warm"
  n0=$(cpu_ns "$pid"); t0=$(cpu_ticks "$pid"); c0=$(child_ticks "$pid"); w0=$(date +%s.%N)
  sleep "$secs"
  n1=$(cpu_ns "$pid"); t1=$(cpu_ticks "$pid"); c1=$(child_ticks "$pid"); w1=$(date +%s.%N)
  awk -v l="$label" -v n0="$n0" -v n1="$n1" -v t0="$t0" -v t1="$t1" -v c0="$c0" -v c1="$c1" \
      -v w0="$w0" -v w1="$w1" -v hz="$hz" 'BEGIN {
    wall = w1 - w0; ns = (n1 - n0) / 1e9; tk = (t1 - t0) / hz; ch = (c1 - c0) / hz
    printf "| %s | %.1f s | %.1f ms | %.3f %% | %.0f ms | %.0f ms | %.3f %% |\n", l, wall, ns * 1e3, ns / wall * 100, tk * 1e3, ch * 1e3, (ns + ch) / wall * 100
  }'
}

cleanup() { tmux kill-session -t "$sess" 2>/dev/null || true; [ -n "${stat_pid:-}" ] && kill "$stat_pid" 2>/dev/null || true; }
trap cleanup EXIT

echo "| what | window | CPU time (schedstat) | % of one CPU | same, utime+stime | children (ethtool -S) | % of one CPU with children |"
echo "| --- | --- | --- | --- | --- | --- | --- |"

# 1. nettune top in tmux, with and without the per-queue driver counters.
for extra in "" "--no-queue-stats"; do
  tmux new-session -d -s "$sess" -x 120 -y 40 "exec $bin top --interval 1 $extra"
  pane=$(tmux list-panes -t "$sess" -F '#{pane_pid}')
  sleep 0.5
  [ "$(cat /proc/"$pane"/comm)" = nettune ] || { echo "pane $pane runs $(cat /proc/"$pane"/comm), not nettune" >&2; exit 1; }
  measure "$pane" "\`nettune top --interval 1${extra:+ $extra}\` (tmux 120x40)"
  tmux send-keys -t "$sess" q
  sleep 0.5
  cleanup
done

# 2. The sampler at 1 Hz, as doctor --sample runs it (no driver counters).
count=$((secs + warm + 2))
nonic=
if "$bin" stat --help | grep -q -- --no-nic-stats; then nonic=--no-nic-stats; fi
"$bin" stat --interval 1 --count "$count" --json $nonic > /dev/null &
stat_pid=$!
measure "$stat_pid" "\`nettune stat --interval 1 --json${nonic:+ $nonic}\` (the sampler at 1 Hz)"
kill "$stat_pid" 2>/dev/null || true
wait "$stat_pid" 2>/dev/null || true
stat_pid=

# 3. doctor --sample, whole process, when this binary has it.
if "$bin" doctor --help >/dev/null 2>&1; then
  python3 "$here/cpu_cost.py" "$bin" doctor --sample "$secs"
fi
