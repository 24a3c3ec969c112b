#!/usr/bin/env bash
# CPU cost of one sampler interval's driver counters for 1, 4 and 16 NICs:
# the SIOCETHTOOL ioctl (what the sampler does now) against one `ethtool -S`
# fork per NIC (what it did before, now the fallback), in the same run.
#
#   bench/nic_stats_cost.sh [SECONDS]      default 3 s per method and size
#
# Creates a network namespace nt-nicc-$$ with 16 veth pairs (va0..va15 up,
# peers vb0..vb15), runs crates/host/examples/nic_stats_cost.rs (release)
# inside it, and deletes it. Needs root, ip(8) and ethtool(8).
set -euo pipefail
secs=${1:-3}
ns="nt-nicc-$$"
cd "$(dirname "$0")/.."
CARGO_INCREMENTAL=0 cargo build --release -q -p nettune-host --example nic_stats_cost
bin=target/release/examples/nic_stats_cost
trap 'ip netns del "$ns" 2>/dev/null || true' EXIT
ip netns add "$ns"
for i in $(seq 0 15); do
  ip -n "$ns" link add "va$i" type veth peer name "vb$i"
  ip -n "$ns" link set "va$i" up
  ip -n "$ns" link set "vb$i" up
done
echo "| NICs | method | samples | wall | own CPU / sample | children (ethtool) / sample | total / sample | % of one CPU at 1 Hz |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
for n in 1 4 16; do
  ifs=$(seq 0 $((n - 1)) | sed 's/^/va/' | tr '\n' ' ')
  # shellcheck disable=SC2086
  ip netns exec "$ns" "$bin" "$secs" $ifs | tail -n +1
done
