#!/usr/bin/env bash
# The main job run twice on a quiet machine and twice beside one busy loop
# (issue "Proof you can trust"): each run's table and results.json under
# $OUT/{quiet,busy}-N, the verdicts summarized by bench/lab_runs.py.
#   usage: sudo OUT=bench/out/proof bash bench/lab_proof.sh [path/to/nettune]
# Each lab run takes about 3 minutes; the busy loop is bounded by `timeout`.
set -euo pipefail
bin="${1:-target/release/nettune}"
out="${OUT:-bench/out/proof}"
mkdir -p "$out"
run() {
  local name="$1"
  echo "== $name: $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
  local t0=$SECONDS
  "$bin" lab --out "$out/$name" > "$out/$name.txt" 2> "$out/$name.err" || echo "exit $?"
  echo "   $((SECONDS - t0)) s"
}
for i in 1 2; do run "quiet-$i"; done
for i in 1 2; do
  timeout 400 bash -c 'while :; do :; done' &
  loop=$!
  run "busy-$i"
  kill "$loop" 2>/dev/null || true
  wait "$loop" 2>/dev/null || true
done
