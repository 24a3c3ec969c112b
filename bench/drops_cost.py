#!/usr/bin/env python3
"""Cost of watching skb:kfree_skb (issue 39): a UDP flood to a closed port
(bench/udp_closed_flood.c, every datagram a NO_SOCKET drop) in a namespace of
its own (nt39-bench), pinned to CPU 1, with no watcher, with `nettune drops`
(adaptive sampling and --every), and with perf as the peer (`perf stat -e
skb:kfree_skb -a`, counting; `perf trace -e skb:kfree_skb`, every record).

Per configuration and round: the flood's rate and its own CPU time per drop
(getrusage: on loopback the receive path runs in the sender's softirq, so the
tracepoint's kernel cost lands there), and the watcher's CPU time
(/proc/PID/stat) over the flood. The cost at 1 million drops per second is
(ns per drop with - without) x 1e6 / 1e9 of a core, plus the watcher's own
CPU scaled from the measured rate to 1e6/s. Medians of ROUNDS interleaved
rounds. Run as root from the repository: python3 bench/drops_cost.py [ROUNDS]
"""
import os, signal, statistics, subprocess, sys, time

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 3
SECS = "3"
NS = "nt39-bench"
BIN = os.environ.get("NETTUNE", "target/debug/nettune")
FLOOD = "/tmp/nt39-flood"

def sh(*a, **k):
    return subprocess.run(a, check=True, **k)

def cpu_ticks(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])  # utime + stime

CONFIGS = {
    "none": None,
    "nettune drops": [BIN, "drops", "--json", "-i", "1"],
    "nettune drops --every": [BIN, "drops", "--json", "--every", "-i", "1"],
    "perf stat -e skb:kfree_skb -a": ["perf", "stat", "-e", "skb:kfree_skb", "-a"],
    "perf trace -e skb:kfree_skb": ["perf", "trace", "-e", "skb:kfree_skb"],
}

def one(cmd):
    w = None
    if cmd:
        w = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.5)
        t0 = cpu_ticks(w.pid)
    out = subprocess.run(["ip", "netns", "exec", NS, "taskset", "-c", "1", FLOOD, SECS],
                         check=True, capture_output=True, text=True).stdout.split()
    rate, ns = float(out[0]), float(out[1])
    wcpu = 0.0
    if w:
        wcpu = (cpu_ticks(w.pid) - t0) / os.sysconf("SC_CLK_TCK") / float(SECS)
        w.send_signal(signal.SIGINT)
        try:
            w.wait(10)
        except subprocess.TimeoutExpired:
            w.kill()
    return rate, ns, wcpu

def main():
    subprocess.run(["ip", "netns", "del", NS], stderr=subprocess.DEVNULL)
    sh("ip", "netns", "add", NS)
    try:
        sh("ip", "-n", NS, "link", "set", "lo", "up")
        res = {k: [] for k in CONFIGS}
        for _ in range(ROUNDS):
            for k, cmd in CONFIGS.items():
                res[k].append(one(cmd))
        base = statistics.median(r[1] for r in res["none"])
        print("| watcher | drops/s reached | flood CPU ns/drop | + ns/drop | kernel cost at 1M drops/s (% of a core) | watcher's own CPU at the rate reached (% of a core) |")
        print("|---|---|---|---|---|---|")
        for k, rs in res.items():
            rate = statistics.median(r[0] for r in rs)
            ns = statistics.median(r[1] for r in rs)
            w = statistics.median(r[2] for r in rs)
            extra = ns - base
            print(f"| {k} | {rate:,.0f} | {ns:,.0f} | {extra:+,.0f} | {extra / 10:.1f} | {w * 100:.1f} |")
        print("rounds:", {k: [(round(a), round(b), round(c * 100, 1)) for a, b, c in v] for k, v in res.items()})
    finally:
        subprocess.run(["ip", "netns", "del", NS])

main()
