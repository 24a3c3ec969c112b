#!/bin/sh
# Fidelity of the userspace delay line (root): RTT added vs asked (p50/p99
# error, ping -c 200 -i 0.01 between the two lab namespaces) at 10 and 50 ms
# one way, then `nettune bench udp-stream --size 1200` loss at a few --rates
# through a 10 ms line. Usage: bench/delayline.sh [NETTUNE_BIN] [RATE...]
set -eu
cd "$(dirname "$0")/.."
bin=${1:-target/debug/nettune}
[ $# -gt 0 ] && shift
echo "# $(date -u +%FT%TZ) $(uname -r) $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
cargo build -q -p nettune-lab --example delayline
exec timeout 300 target/debug/examples/delayline "$(realpath "$bin")" "$@"
