#!/usr/bin/env bash
# Compare `nettune bench` with the peer tools on one path: two network
# namespaces (ntbench-a = client, ntbench-b = server) joined by a 2-queue veth
# pair. Each measurement runs nettune and every peer alternately, 3 times, and
# bench/RESULTS.md gets the medians and nettune ÷ best-peer ratios between
# <!-- engine:begin --> and <!-- engine:end --> (the rest of the file is left alone).
#
# Usage (root):  bench/peers.sh [SECONDS_PER_RUN]     default 3; about 5 minutes in all
# NTBENCH_OTHER=FILE NTBENCH_OTHER_LABEL=TEXT add a summary of another run's RR rows
# (e.g. one taken under other load) below the table.
# NTBENCH_BASE=/path/to/old/nettune measures that binary too, as the tool "nettune-base"
# (its server on port 5291), alternately with this build and the peers in every
# repetition, and prints a before/after table (medians, this ÷ base) instead of
# rewriting bench/RESULTS.md, so before/after ratios come from one run.
set -euo pipefail
cd "$(dirname "$0")/.."

T="${1:-3}"
REPS=3
A=ntbench-a
B=ntbench-b
IPA=198.18.255.1
IPB=198.18.255.2
OUT=$(mktemp -d /tmp/ntbench.XXXXXX)
DATA="$OUT/data.tsv"
PIDS=()

cleanup() {
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  for ns in $A $B; do
    for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
    ip netns del "$ns" 2>/dev/null || true
  done
}
trap cleanup EXIT INT TERM

[ "$(id -u)" = 0 ] || { echo "peers.sh: needs root (network namespaces)" >&2; exit 1; }

need=()
for pair in iperf3:iperf3 iperf:iperf sockperf:sockperf nuttcp:nuttcp qperf:qperf jq:jq taskset:util-linux; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || need+=("${pair#*:}")
done
if [ "${#need[@]}" -gt 0 ]; then
  echo "peers.sh: installing ${need[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

cargo build --release --locked -q -p nettune
NT="$PWD/target/release/nettune"
BASE="${NTBENCH_BASE:-}"
if [ -n "$BASE" ]; then
  [ -x "$BASE" ] || { echo "peers.sh: NTBENCH_BASE=$BASE is not an executable" >&2; exit 1; }
  BASE=$(readlink -f "$BASE")
fi
NTS="nettune${BASE:+ nettune-base}"
ntbin() { if [ "$1" = nettune-base ]; then echo "$BASE"; else echo "$NT"; fi; }
ntport() { if [ "$1" = nettune-base ]; then echo 5291; else echo 5290; fi; }
# This build and the base in turn, first one then the other on alternate repetitions.
ntorder() { if [ $(($1 % 2)) = 1 ]; then echo "$NTS"; else echo "$NTS" | tr ' ' '\n' | tac | tr '\n' ' '; fi; }

cleanup
ip netns add $A
ip netns add $B
ip -n $A link set lo up
ip -n $B link set lo up
ip -n $A link add nt0 numtxqueues 2 numrxqueues 2 type veth peer name nt1 netns $B numtxqueues 2 numrxqueues 2
ip -n $A addr add $IPA/30 dev nt0
ip -n $B addr add $IPB/30 dev nt1
ip -n $A link set nt0 up
ip -n $B link set nt1 up
# iperf2 listens on 5011/5012: nuttcp needs 5000 and 5001.
# Connection-rate runs would otherwise stall on TIME_WAIT ports (per-namespace sysctls).
ip netns exec $A sysctl -qw net.ipv4.tcp_tw_reuse=1 net.ipv4.ip_local_port_range="1024 65535"
CC_DEFAULT=$(ip netns exec $A cat /proc/sys/net/ipv4/tcp_congestion_control)

inA() { ip netns exec $A "$@"; }
inB() { ip netns exec $B "$@"; }
rec() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$DATA"; }   # metric tool value
udp_in() { inB awk '/^Udp:/{n++; if(n==2) print $2}' /proc/net/snmp; }

servers() {  # $1: taskset CPU list for the servers ("" = unpinned)
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  PIDS=()
  sleep 0.3
  local pin=()
  [ -n "$1" ] && pin=(taskset -c "$1")
  inB "${pin[@]}" "$NT" serve -q --listen $IPB >/dev/null 2>&1 & PIDS+=($!)
  if [ -n "$BASE" ]; then inB "${pin[@]}" "$BASE" serve -q --listen $IPB -p 5291 >/dev/null 2>&1 & PIDS+=($!); fi
  inB "${pin[@]}" iperf3 -s -B $IPB >/dev/null 2>&1 & PIDS+=($!)
  inB "${pin[@]}" iperf -s -B $IPB -p 5011 -w 4M >/dev/null 2>&1 & PIDS+=($!)
  inB "${pin[@]}" iperf -s -u -B $IPB -p 5012 -w 4M >/dev/null 2>&1 & PIDS+=($!)
  inB "${pin[@]}" sockperf sr -i $IPB -p 11111 --buffer-size 4194304 >/dev/null 2>&1 & PIDS+=($!)
  inB "${pin[@]}" sockperf sr -i $IPB -p 11112 --tcp >/dev/null 2>&1 & PIDS+=($!)
  inB "${pin[@]}" nuttcp -S --nofork >/dev/null 2>&1 & PIDS+=($!)
  inB "${pin[@]}" qperf >/dev/null 2>&1 & PIDS+=($!)
  sleep 1
}

nt() { inA "$@"; }   # client-side runner, optionally prefixed with taskset

sock_pp() {  # $1: extra args; prints "tps p50 p99" (RTT, µs)
  local o
  o=$(nt taskset -c 0 sockperf pp -i $IPB "$@" -t "$T" --full-rtt -m 14 2>&1 | sed 's/\x1b\[[0-9;]*m//g')
  local rt rx p50 p99
  rt=$(grep -o 'Valid Duration\] RunTime=[0-9.]*' <<<"$o" | grep -o '[0-9.]*$')
  rx=$(grep 'Valid Duration' <<<"$o" | grep -o 'ReceivedMessages=[0-9]*' | grep -o '[0-9]*$')
  p50=$(grep 'percentile 50.000' <<<"$o" | awk '{print $NF}')
  p99=$(grep 'percentile 99.000' <<<"$o" | awk '{print $NF}')
  awk -v rt="$rt" -v rx="$rx" -v a="$p50" -v b="$p99" 'BEGIN{printf "%.1f %s %s\n", rx/rt, a, b}'
}

ntj() { nt "$@" --json --warmup 0.5 --duration "$T" --interval "$T"; }
# ntb TOOL [taskset -c N] bench ARGS...: run `nettune bench` of TOOL (nettune or nettune-base).
ntb() {
  local t=$1; shift
  local pre=()
  if [ "$1" = taskset ]; then pre=("$1" "$2" "$3"); shift 3; fi
  ntj "${pre[@]}" "$(ntbin "$t")" "$@" -p "$(ntport "$t")"
}

echo "peers.sh: results in $OUT, ${T}s per run, $REPS repetitions"
START=$(date +%s)
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- tcp-stream, 2 flows ------------------------------------------------------
servers ""
for cc in "$CC_DEFAULT" reno; do
  inA sysctl -qw net.ipv4.tcp_congestion_control="$cc"
  inB sysctl -qw net.ipv4.tcp_congestion_control="$cc"
  for r in $(seq $REPS); do
    for t in $(ntorder "$r"); do
      v=$(ntb $t bench $IPB --test tcp-stream --flows 2 | jq '.results[0].bits_per_sec') && rec "tcp-stream-2-$cc" $t "$v" || true
    done
    v=$(nt iperf3 -c $IPB -P 2 -t "$T" -J | jq '.end.sum_received.bits_per_second') && rec "tcp-stream-2-$cc" iperf3 "$v" || true
    v=$(nt iperf -c $IPB -p 5011 -P 2 -t "$T" -y C | tail -1 | awk -F, '{print $NF}') && rec "tcp-stream-2-$cc" iperf2 "$v" || true
    v=$(nt nuttcp -N2 -T"$T" $IPB | grep -o '= *[0-9.]* Mbps' | tail -1 | grep -o '[0-9.]*' | awk '{print $1*1e6}') && rec "tcp-stream-2-$cc" nuttcp "$v" || true
  done
done
inA sysctl -qw net.ipv4.tcp_congestion_control="$CC_DEFAULT"
inB sysctl -qw net.ipv4.tcp_congestion_control="$CC_DEFAULT"

# ---- udp-stream, 64-byte datagrams received/s --------------------------------
for r in $(seq $REPS); do
 for t in $(ntorder "$r"); do
  k0=$(udp_in)
  j=$(ntb $t bench $IPB --test udp-stream --size 64 --flows 2) || j=""
  k1=$(udp_in)
  if [ -n "$j" ]; then
    rec udp64 $t "$(jq '.results[0].per_sec' <<<"$j")"
    rec udp64-accuracy $t "$(jq "(.results[0].kernel_check.kernel_in_datagrams - .results[0].kernel_check.app_received) * 100 / .results[0].kernel_check.kernel_in_datagrams" <<<"$j")"
    rec udp64-accuracy-outside $t "$(jq --argjson k $((k1 - k0)) "(\$k - .results[0].udp.received) * 100 / \$k" <<<"$j")"
    rec udp64-loss $t "$(jq '.results[0].udp.loss_pct' <<<"$j")"
  fi
  j=$(ntb $t bench $IPB --test udp-stream --size 64 --flows 1) && rec udp64-1flow $t "$(jq '.results[0].per_sec' <<<"$j")" || true
  j=$(ntb $t bench $IPB --test udp-stream --size 64 --flows 2 --udp-gso --udp-gro) && rec udp64-gso-gro $t "$(jq '.results[0].per_sec' <<<"$j")" || true
  j=$(ntb $t bench $IPB --test udp-stream --size 1400 --flows 2) && rec udp1400 $t "$(jq '.results[0].bits_per_sec' <<<"$j")" || true
  j=$(ntb $t bench $IPB --test udp-stream --size 1400 --flows 2 --udp-gso --udp-gro) && rec udp1400-gso-gro $t "$(jq '.results[0].bits_per_sec' <<<"$j")" || true
 done
  for tool in iperf3 iperf2 sockperf nuttcp; do
    k0=$(udp_in)
    case $tool in
      iperf3) nt iperf3 -c $IPB -u -l 64 -b 0 -w 4M -t "$T" >/dev/null 2>&1 || true ;;
      iperf2) nt iperf -c $IPB -p 5012 -u -l 64 -b 100000M -w 4M -t "$T" >/dev/null 2>&1 || true ;;
      sockperf) nt sockperf tp -i $IPB -p 11111 -m 64 -t "$T" >/dev/null 2>&1 || true ;;
      nuttcp) nt nuttcp -u -l64 -R10g -w4096 -T"$T" $IPB >/dev/null 2>&1 || true ;;
    esac
    k1=$(udp_in)
    rec udp64 "$tool" "$(awk -v d=$((k1 - k0)) -v t="$T" 'BEGIN{print d/t}')"
  done
done

# ---- request/response, 1 flow; client on CPU 0, server on CPU 1 -------------
servers 1
for proto in tcp udp; do
  for r in $(seq $REPS); do
   for t in $(ntorder "$r"); do
    j=$(ntb $t taskset -c 0 bench $IPB --test $proto-rr --size 1) && {
      rec $proto-rr $t "$(jq '.results[0].per_sec' <<<"$j")"
      rec $proto-rr-p50 $t "$(jq '.results[0].latency.p50_ns/1000' <<<"$j")"
      rec $proto-rr-p99 $t "$(jq '.results[0].latency.p99_ns/1000' <<<"$j")"
    } || true
    j=$(ntb $t taskset -c 0 bench $IPB --test $proto-rr --size 1 --busy-poll 50) && {
      rec $proto-rr-busypoll $t "$(jq '.results[0].per_sec' <<<"$j")"
      rec $proto-rr-busypoll-p50 $t "$(jq '.results[0].latency.p50_ns/1000' <<<"$j")"
    } || true
   done
    if [ $proto = tcp ]; then r=$(sock_pp -p 11112 --tcp) || r=""; else r=$(sock_pp -p 11111) || r=""; fi
    if [ -n "$r" ]; then
      read -r tps p50 p99 <<<"$r"
      rec $proto-rr sockperf "$tps"; rec $proto-rr-p50 sockperf "$p50"; rec $proto-rr-p99 sockperf "$p99"
    fi
    lat=$(nt taskset -c 0 qperf $IPB -t "$T" -m 1 ${proto}_lat 2>/dev/null | awk '/latency/{v=$3; if($4=="ms") v*=1000; if($4=="ns") v/=1000; print v}') || lat=""
    [ -n "$lat" ] && rec $proto-rr qperf "$(awk -v l="$lat" 'BEGIN{print 1e6/(2*l)}')"
  done
done

# ---- tcp-crr ------------------------------------------------------------------
servers ""
for r in $(seq $REPS); do
 for t in $(ntorder "$r"); do
  j=$(ntb $t bench $IPB --test tcp-crr --flows 1) && rec tcp-crr-1 $t "$(jq '.results[0].per_sec' <<<"$j")" || true
  j=$(ntb $t bench $IPB --test tcp-crr --flows 2) && rec tcp-crr-2 $t "$(jq '.results[0].per_sec' <<<"$j")" || true
 done
done

END=$(date +%s)
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)
if [ -n "$BASE" ]; then
  # Before/after only: medians of this build and of the base, from this one run.
  python3 - "$DATA" "$("$NT" --version)" "$("$BASE" --version) ($BASE)" >"$OUT/before-after.md" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m, tool, v = line.rstrip("\n").split("\t")
    try:
        rows.setdefault(m, {}).setdefault(tool, []).append(float(v))
    except ValueError:
        pass
print(f"new: {sys.argv[2]}; base: {sys.argv[3]}\n")
print("| measurement | new (median, range) | base (median, range) | new ÷ base |")
print("|---|---|---|---|")
def cell(v):
    return f"{statistics.median(v):.4g} ({min(v):.4g}–{max(v):.4g})"
for m, t in rows.items():
    if "nettune" in t and "nettune-base" in t:
        a, b = statistics.median(t["nettune"]), statistics.median(t["nettune-base"])
        ratio = f"{a / b:.3f}" if b else "–"
        print(f"| {m} | {cell(t['nettune'])} | {cell(t['nettune-base'])} | {ratio} |")
PY
  cp "$DATA" "$OUT/data.tsv" 2>/dev/null || true
  cat "$OUT/before-after.md"
  echo "peers.sh: before/after in $OUT/before-after.md (bench/RESULTS.md left alone) in $((END - START)) s, load $LOAD0 at the start, $LOAD1 at the end"
  exit 0
fi
cp "$DATA" bench/last-peers-data.tsv
python3 bench/render_results.py "$DATA" bench/RESULTS.md \
  --seconds "$T" --reps "$REPS" --elapsed $((END - START)) \
  --kernel "$(uname -r)" --cc "$CC_DEFAULT" --load "$LOAD0 at the start, $LOAD1 at the end" \
  --nettune "$("$NT" --version)" \
  ${NTBENCH_OTHER:+--other "$NTBENCH_OTHER" --other-label "${NTBENCH_OTHER_LABEL:-another run}"} \
  --peers "$(iperf3 --version | head -1 | cut -d' ' -f1-2); $(iperf -v 2>&1 | cut -d' ' -f1-3); sockperf $(sockperf --version 2>&1 | head -1 | grep -o '[0-9][0-9.]*'); $(nuttcp -V 2>&1 | head -1); qperf $(dpkg-query -W -f='${Version}' qperf 2>/dev/null || echo '?')"
echo "peers.sh: wrote bench/RESULTS.md (engine section) in $((END - START)) s"
