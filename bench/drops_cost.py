#!/usr/bin/env python3
"""Cost of watching skb:kfree_skb (issue 39).

A drop flood (bench/udp_closed_flood.c; default mode `packet`: AF_PACKET
frames of an unhandled ethertype on "lo", every one an UNHANDLED_PROTO drop;
mode `udp`: UDP to a closed port, NO_SOCKET) runs in a namespace of its own
(nt39-bench), pinned to CPU 1, once per watcher per round: with no watcher,
with `nettune drops`, and with the peers (`perf stat -e skb:kfree_skb -a`,
counting; `perf trace -e skb:kfree_skb`, every record; bpftrace counting by
reason, when it is installed: Debian 12's 0.17 has no raw tracepoints).

Per run: the flood's CPU time per drop, the median over its 20 ms slices
(CLOCK_THREAD_CPUTIME_ID: on loopback the receive path and the drop run in
the sender's softirq, charged to the sender without
CONFIG_IRQ_TIME_ACCOUNTING, so a tracepoint's kernel cost lands there; the
median slice shrugs off the slices in which another process evicted the
caches), and the watcher's own CPU time (/proc/PID/stat) over the flood. Rounds are interleaved and the
order of the watchers is shuffled in each round; a watcher's cost per drop
is its round's ns/drop minus the same round's unwatched ns/drop. Reported:
the median of those paired differences with a 95 % bootstrap interval
(10 000 resamples of the rounds), and the mean with a 95 % t interval; at 1
million drops per second, d ns per drop is d/10 % of one core.

Run as root from the repository:
    gcc -O2 -o /tmp/nt39-flood bench/udp_closed_flood.c
    cargo build --release -p nettune
    python3 bench/drops_cost.py [ROUNDS] [packet|udp]
NETTUNE= names the binary (target/release/nettune); SECS= the flood length;
PROBE=target/release/examples/kfree_skb_probe adds the empty-program floor
and the counter alone, on the raw tracepoint and at fentry; CONFIGS=a,b
keeps only those watchers (and `none`); NS= the namespace (nt39-bench).
"""
import os, random, shutil, signal, statistics, subprocess, sys, time

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 20
MODE = sys.argv[2] if len(sys.argv) > 2 else "packet"
SECS = os.environ.get("SECS", "2")
NS = os.environ.get("NS", "nt39-bench")
BIN = os.environ.get("NETTUNE", "target/release/nettune")
FLOOD = os.environ.get("FLOOD", "/tmp/nt39-flood")

CONFIGS = {
    "none": None,
    "nettune drops": [BIN, "drops", "--json", "-i", "1"],
    "nettune drops --counting perf": [BIN, "drops", "--json", "-i", "1", "--counting", "perf"],
    "perf stat -e skb:kfree_skb -a": ["perf", "stat", "-e", "skb:kfree_skb", "-a"],
    "perf trace -e skb:kfree_skb": ["perf", "trace", "-e", "skb:kfree_skb"],
    "bpftrace tracepoint (count by reason)": [
        "bpftrace", "-e", "tracepoint:skb:kfree_skb { @[args->reason] = count(); }"],
}
# The parts of nettune's default: COMPONENTS= a program that attaches
# crates/sys's BPF counter alone, or (argument `disabled-perf`) with a perf
# event per CPU opened and disabled (bench/RESULTS.md shows its 20 lines).
if os.environ.get("COMPONENTS"):
    CONFIGS["BPF counter alone"] = [os.environ["COMPONENTS"]]
    CONFIGS["BPF counter + perf events disabled"] = [os.environ["COMPONENTS"], "disabled-perf"]
# The floor (issue 39): PROBE= crates/sys's example (cargo build --release
# -p nettune-sys --example kfree_skb_probe) attaching an empty BPF program
# (`r0 = 0; exit`) on the raw tracepoint, beside the BPF counter alone.
if os.environ.get("PROBE"):
    CONFIGS["BPF empty program (r0 = 0; exit)"] = [os.environ["PROBE"], "empty"]
    CONFIGS["BPF counter alone (example)"] = [os.environ["PROBE"], "counter"]
    # the same two at fentry of sk_skb_reason_drop (kfree_skb_reason before
    # 6.10), found by BTF: a direct call from the function's entry into a
    # BPF trampoline rather than the tracepoint's indirect call
    CONFIGS["BPF fentry empty program"] = [os.environ["PROBE"], "fentry-empty"]
    CONFIGS["BPF fentry counter (example)"] = [os.environ["PROBE"], "fentry-counter"]
if os.environ.get("CONFIGS"):
    CONFIGS = {k: v for k, v in CONFIGS.items() if k == "none" or k in os.environ["CONFIGS"].split(",")}
if not shutil.which("bpftrace"):
    CONFIGS = {k: v for k, v in CONFIGS.items() if not k.startswith("bpftrace")}


def sh(*a, **k):
    return subprocess.run(a, check=True, **k)


def cpu_ticks(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])  # utime + stime


def one(cmd):
    w = None
    if cmd:
        w = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.5)  # attached (bpftrace compiles first)
        if w.poll() is not None:
            raise SystemExit(f"{cmd[0]} exited with {w.returncode} before the flood")
        t0 = cpu_ticks(w.pid)
    out = subprocess.run(["ip", "netns", "exec", NS, "taskset", "-c", "1", FLOOD, SECS, MODE],
                         check=True, capture_output=True, text=True).stdout.split()
    rate, ns = float(out[0]), float(out[2])  # the median 20 ms slice
    wcpu = 0.0
    if w:
        wcpu = (cpu_ticks(w.pid) - t0) / os.sysconf("SC_CLK_TCK") / float(SECS)
        w.send_signal(signal.SIGINT)
        try:
            w.wait(10)
        except subprocess.TimeoutExpired:
            w.kill()
            w.wait()
    return rate, ns, wcpu


def boot_median(xs, rng, n=10000):
    meds = sorted(statistics.median(rng.choices(xs, k=len(xs))) for _ in range(n))
    return meds[int(0.025 * n)], meds[int(0.975 * n) - 1]


def t_interval(xs):
    # two-sided 95 % Student t quantiles for small n (df 1..30), else 1.96
    t = [12.71, 4.30, 3.18, 2.78, 2.57, 2.45, 2.36, 2.31, 2.26, 2.23, 2.20, 2.18, 2.16, 2.14,
         2.13, 2.12, 2.11, 2.10, 2.09, 2.09, 2.08, 2.07, 2.07, 2.06, 2.06, 2.06, 2.05, 2.05,
         2.05, 2.04]
    n = len(xs)
    m = statistics.mean(xs)
    if n < 2:
        return m, m, m
    q = t[n - 2] if n - 1 <= len(t) else 1.96
    h = q * statistics.stdev(xs) / n ** 0.5
    return m, m - h, m + h


def attachable():
    """Drop the probe's watchers that the kernel refuses (fentry where the
    kernel does not allow it), saying why, rather than abort the run."""
    for k, cmd in list(CONFIGS.items()):
        if not cmd or cmd[0] != os.environ.get("PROBE"):
            continue
        r = subprocess.run(cmd + ["0"], capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            why = (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1]
            print(f"skipped {k!r}: {why}")
            del CONFIGS[k]


def main():
    rng = random.Random(39)
    attachable()
    subprocess.run(["ip", "netns", "del", NS], stderr=subprocess.DEVNULL)
    sh("ip", "netns", "add", NS)
    print("load average before:", open("/proc/loadavg").read().strip())
    try:
        sh("ip", "-n", NS, "link", "set", "lo", "up")
        res = {k: [] for k in CONFIGS}
        for _ in range(ROUNDS):
            order = list(CONFIGS)
            rng.shuffle(order)
            for k in order:
                res[k].append(one(CONFIGS[k]))
        print("load average after:", open("/proc/loadavg").read().strip())
        print(f"mode {MODE}, {ROUNDS} rounds of {SECS} s per watcher")
        print("| watcher | drops/s (median) | flood ns/drop (median) | + ns/drop, median [95 % bootstrap] | + ns/drop, mean [95 % t] | % of a core at 1M drops/s (median [interval]) | watcher's own CPU (% of a core, median) |")
        print("|---|---|---|---|---|---|---|")
        for k, rs in res.items():
            rate = statistics.median(r[0] for r in rs)
            ns = statistics.median(r[1] for r in rs)
            w = statistics.median(r[2] for r in rs)
            d = [r[1] - b[1] for r, b in zip(rs, res["none"])]
            med = statistics.median(d)
            lo, hi = boot_median(d, rng)
            m, mlo, mhi = t_interval(d)
            print(f"| {k} | {rate:,.0f} | {ns:,.0f} | {med:+,.1f} [{lo:+,.1f}, {hi:+,.1f}] | "
                  f"{m:+,.1f} [{mlo:+,.1f}, {mhi:+,.1f}] | {med / 10:.2f} [{lo / 10:.2f}, {hi / 10:.2f}] | {w * 100:.1f} |")
        print("rounds (drops/s, flood ns/drop, watcher % of a core):")
        for k, v in res.items():
            print(f"  {k}: {[(round(a), round(b), round(c * 100, 1)) for a, b, c in v]}")
    finally:
        subprocess.run(["ip", "netns", "del", NS])


if __name__ == "__main__":
    main()
