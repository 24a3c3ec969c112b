#!/bin/bash
# The guest studies of docs/guests.md ("Studies"), one after the other, each on freshly booted
# guests, with what bench/RESULTS.md records beside each: date, load average before and after,
# host kernel, QEMU version. The autotune study searches min-p99's own space (which holds
# coalesce_rx_usecs 0 where the driver takes it); AUTOTUNE_ARGS adds options.
# Usage (as root, after `bash .ci/guest-kernel` and a release build):
#   bash bench/guest_studies.sh OUT_DIR [itr-rr|itr-levels|autotune|many-clients]...
set -u
out=${1:?usage: guest_studies.sh OUT_DIR [study]...}; shift
studies=("$@"); [ ${#studies[@]} -eq 0 ] && studies=(itr-rr itr-levels autotune many-clients)
repo=$(cd "$(dirname "$0")/.." && pwd)
nt=${NETTUNE:-$repo/target/release/nettune}
mkdir -p "$out"
meta() { echo "$(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg) host $(uname -r) $(qemu-system-x86_64 --version | head -1)"; }
for s in "${studies[@]}"; do
  case $s in
    itr-rr|itr-levels) up=(--nic e1000-82545em); cmd=("$nt" experiment "$repo/examples/guest-$s.toml" --out "$out/$s" --yes) ;;
    many-clients) up=(--nic e1000e --clients 3); cmd=("$nt" experiment "$repo/examples/guest-many-clients.toml" --out "$out/$s" --yes) ;;
    autotune) up=(--nic e1000-82545em); cmd=("$nt" autotune --objective min-p99 --workload "$repo/examples/autotune-guest-p99.toml"
                 --inventory /run/nettune-guest/inventory.toml --server server --clients clients --out "$out/$s" ${AUTOTUNE_ARGS:-}) ;;
    *) echo "unknown study $s" >&2; exit 2 ;;
  esac
  echo "== $s start $(meta)" | tee -a "$out/meta.txt"
  # shellcheck disable=SC2086 # GUEST_ARGS: more `guest up` options, e.g. --base-port 47000
  "$nt" guest up "${up[@]}" --guest-nettune "$nt" ${GUEST_ARGS:-} -- "${cmd[@]}" 2>&1 | tee "$out/$s.log"
  echo "== $s end $(meta) exit ${PIPESTATUS[0]}" | tee -a "$out/meta.txt"
done
