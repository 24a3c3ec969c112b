#!/bin/sh
# Fidelity of the userspace delay line (root), release builds, through
# 2-host labs built on it (crates/lab/examples/delayline.rs): RTT added vs
# asked (p50/p99 error of ping -c 200 -i 0.01) at 10, 50 and 100 ms RTT; the
# jitter band (20 ± 10 ms); udp-stream 1200 B loss at rising --rate and
# tcp-stream throughput through a 10 ms line, without and with a 100 Mbit/s
# rate limit. Usage: bench/delayline.sh [SECTION...] (rtt jitter free rated).
set -eu
cd "$(dirname "$0")/.."
echo "# $(date -u +%FT%TZ) $(uname -r) $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $(git rev-parse --short HEAD)"
cargo build -q --release -p nettune --bin nettune
cargo build -q --release -p nettune-lab --example delayline
exec timeout 600 target/release/examples/delayline "$(pwd)/target/release/nettune" "$@"
