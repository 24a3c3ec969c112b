#!/usr/bin/env bash
# The grid of tput.toml and five seeded max-throughput searches over the same
# levels, in the lab, one after the other (as root; about 85 minutes on 2
# CPUs). Outputs go to bench/out/autotune-grid/ (not committed: the grid's
# results.json holds every run's raw bench output); judge.py reads them.
#   bash bench/studies/autotune-grid/run.sh [SEEDS...]   # default: 1 2 3 4 5
#   SKIP_GRID=1 bash bench/studies/autotune-grid/run.sh 6  # one more search
#   PASS2=1 bash bench/studies/autotune-grid/run.sh       # and a second pass per seed
#   OUT=DIR SKIP_GRID=1 ... # searches into DIR (link DIR/grid to a grid's output)
#   ARGS="--forward-after off" ...                       # more autotune options
#   GRID=pps.toml OBJECTIVE=max-pps OUT=... ...          # another objective's grid
#   GRID_SEED=2 OUT=... ...  # the grid in another run order (DIR/grid.toml)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
bin="${NETTUNE:-$root/target/release/nettune}"
out="${OUT:-$root/bench/out/autotune-grid}"
mkdir -p "$out"
seeds=("$@")
[ "${#seeds[@]}" -gt 0 ] || seeds=(1 2 3 4 5)
log() { echo "$(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg): $*" | tee -a "$out/log.txt"; }
if [ -z "${SKIP_GRID:-}" ]; then
  grid="$here/${GRID:-tput.toml}"
  if [ -n "${GRID_SEED:-}" ]; then
    sed "s/^seed = .*/seed = $GRID_SEED/" "$grid" > "$out/grid.toml"
    grid="$out/grid.toml"
  fi
  log "grid start"
  "$bin" experiment "$grid" --out "$out/grid" > "$out/grid.txt" 2>&1
  log "grid end"
fi
for s in "${seeds[@]}"; do
  log "search seed $s start"
  # shellcheck disable=SC2086
  "$bin" autotune --objective "${OBJECTIVE:-max-throughput}" --lab --seed "$s" ${ARGS:-} --out "$out/search-$s" \
    > "$out/search-$s.txt" 2>&1
  log "search seed $s end"
done
# PASS2=1: a second search per seed from the setting the first kept
# (`--from`, budget 60), over what is left of the space.
if [ -n "${PASS2:-}" ]; then
  for s in "${seeds[@]}"; do
    log "pass2 seed $s start"
    "$bin" autotune --objective "${OBJECTIVE:-max-throughput}" --lab --from "$out/search-$s" --seed "$s" \
      --budget 60 --out "$out/pass2-$s" > "$out/pass2-$s.txt" 2>&1
    log "pass2 seed $s end"
  done
fi
python3 "$here/judge.py" "$out"
