#!/usr/bin/env python3
"""The floor of a probe on kfree_skb, raw tracepoint against fentry, in a
QEMU/KVM guest (issue 39), for kernels where the host refuses fentry.

Boots the guest kernel of .ci/guest-kernel (Debian's 6.1, where every
reasoned drop goes through kfree_skb_reason; lockdown off, BTF on) with an
initramfs of busybox, the static flood and crates/sys's kfree_skb_probe
(its libraries beside it), 2 vCPUs (KVM, QEMU's `qemu64` CPU model: this host's KVM refuses
`-cpu host` and `max`, MSR 0x10a), no network device. In the guest, per
round, the flood runs pinned to CPU 1 once per watcher (the order rotates
each round): none, then each probe mode attached (`empty`, `counter` on
the raw tracepoint; `fentry-empty`, `fentry-counter` at fentry). The host
parses the console and prints the table of bench/drops_cost.py (paired
differences with the same round's unwatched run, median with a 95 %
bootstrap interval, mean with a 95 % t interval).

Run as root from the repository:
    gcc -O2 -static -o /tmp/nt39-flood-static bench/udp_closed_flood.c
    cargo build --release -p nettune-sys --example kfree_skb_probe
    python3 bench/drops_cost_guest.py [ROUNDS] [packet|udp]
KERNEL= the vmlinuz (default: the .ci/guest-kernel cache's), FLOOD= the
static flood, PROBE= the probe, SECS= the flood length, ACCEL= kvm (the
default) or tcg, CPU= the QEMU CPU model. Only KVM timings say anything about
a probe's cost; under TCG the run shows only that each mode loads and
attaches. On the project's machine (bench/RESULTS.md) KVM does not boot this
guest, so no cost figure has come from this script yet. Before the rounds,
each counter runs 4 s around a 1 s flood and prints what it counted
(`NT check`).
"""
import os, random, shutil, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from drops_cost import boot_median, t_interval  # noqa: E402

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 20
MODE = sys.argv[2] if len(sys.argv) > 2 else "packet"
SECS = os.environ.get("SECS", "2")
CACHE = os.environ.get("NETTUNE_GUEST_CACHE", "/var/cache/nettune-guest")
FLOOD = os.environ.get("FLOOD", "/tmp/nt39-flood-static")
PROBE = os.environ.get("PROBE", "target/release/examples/kfree_skb_probe")
WATCHERS = ["none", "empty", "counter", "fentry-empty", "fentry-counter"]


def kernel():
    if os.environ.get("KERNEL"):
        return os.environ["KERNEL"]
    ver = open(os.path.join(CACHE, "kernel")).read().strip().removeprefix("linux-image-")
    return os.path.join(CACHE, f"linux-image-{ver}", "boot", f"vmlinuz-{ver}")


INIT = """#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
ip link set lo up
echo "NT uname $(uname -r)"
echo "NT loadavg $(cat /proc/loadavg)"
echo "NT spectre_v2 $(cat /sys/devices/system/cpu/vulnerabilities/spectre_v2)"
echo "NT cpu $(grep -m1 'model name' /proc/cpuinfo)"
for m in {modes}; do
  if /probe $m 0 2>/tmp/err; then echo "NT attach $m ok"; else echo "NT attach $m failed: $(tail -1 /tmp/err)"; fi
done
for m in counter fentry-counter; do
  /probe $m 4 > /tmp/c 2>/dev/null & p=$!
  sleep 1
  echo "NT check $m flood $(taskset -c 1 /flood 1 {mode})"
  wait $p
  echo "NT check $m $(cat /tmp/c)"
done
set -- {watchers}
n=$#
r=1
while [ $r -le {rounds} ]; do
  i=0
  while [ $i -lt $n ]; do
    k=$(( (i + r) % n + 1 ))
    eval m=\\${{$k}}
    p=
    if [ $m != none ]; then /probe $m 600 2>/dev/null & p=$!; sleep 1; fi
    echo "NT run $r $m $(taskset -c 1 /flood {secs} {mode})"
    if [ -n "$p" ]; then kill $p; wait $p 2>/dev/null; fi
    i=$((i + 1))
  done
  r=$((r + 1))
done
echo "NT loadavg $(cat /proc/loadavg)"
echo "NT done"
poweroff -f
"""


def initramfs(d):
    os.makedirs(f"{d}/root/bin")
    os.makedirs(f"{d}/root/lib64")
    os.makedirs(f"{d}/root/lib/x86_64-linux-gnu")
    for x in ("proc", "sys", "tmp", "dev"):
        os.makedirs(f"{d}/root/{x}")
    shutil.copy("/bin/busybox", f"{d}/root/bin/busybox")
    shutil.copy(FLOOD, f"{d}/root/flood")
    shutil.copy(PROBE, f"{d}/root/probe")
    for line in subprocess.run(["ldd", PROBE], capture_output=True, text=True).stdout.splitlines():
        parts = line.split()
        path = parts[2] if "=>" in parts and len(parts) > 2 else parts[0]
        if path.startswith("/"):
            dst = f"{d}/root{path}"
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copy(path, dst)
    init = INIT.format(modes=" ".join(WATCHERS[1:]), watchers=" ".join(WATCHERS),
                       rounds=ROUNDS, secs=SECS, mode=MODE)
    with open(f"{d}/root/init", "w") as f:
        f.write(init)
    os.chmod(f"{d}/root/init", 0o755)
    files = subprocess.run(["find", "."], cwd=f"{d}/root", capture_output=True, text=True).stdout
    with open(f"{d}/initrd", "wb") as out:
        subprocess.run(["busybox", "cpio", "-o", "-H", "newc"], cwd=f"{d}/root", input=files.encode(),
                       stdout=out, stderr=subprocess.DEVNULL, check=True)
    return f"{d}/initrd"


def main():
    print("host load average before:", open("/proc/loadavg").read().strip())
    with tempfile.TemporaryDirectory(prefix="nt39a-guest-") as d:
        rd = initramfs(d)
        per_run = len(WATCHERS) * (float(SECS) + 2.5)
        limit = 120 + ROUNDS * per_run * 2
        cmd = ["qemu-system-x86_64", "-accel", os.environ.get("ACCEL", "kvm"), "-cpu", os.environ.get("CPU", "qemu64"), "-smp", "2", "-m", "1024",
               "-nodefaults", "-nographic", "-no-reboot", "-serial", "stdio", "-nic", "none",
               "-kernel", kernel(), "-initrd", rd,
               "-append", "console=ttyS0 quiet panic=-1 mitigations=auto"]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=limit).stdout
    print("host load average after:", open("/proc/loadavg").read().strip())
    res = {w: {} for w in WATCHERS}
    for line in out.splitlines():
        f = line.strip().split()
        if len(f) < 2 or f[0] != "NT":
            continue
        if f[1] == "run" and len(f) >= 7:
            res[f[3]][int(f[2])] = (float(f[4]), float(f[6]))
        else:
            print("guest:", " ".join(f[1:]))
    rounds = sorted(set.intersection(*(set(v) for v in res.values() if v)))
    print(f"mode {MODE}, {len(rounds)} rounds of {SECS} s per watcher")
    print("| watcher | drops/s (median) | flood ns/drop (median) | + ns/drop, median [95 % bootstrap] | + ns/drop, mean [95 % t] |")
    print("|---|---|---|---|---|")
    rng = random.Random(39)
    for w, rs in res.items():
        if not rs or not rounds:
            print(f"| {w} | - | - | not run | - |")
            continue
        d = [rs[r][1] - res["none"][r][1] for r in rounds]
        med = sorted(d)[len(d) // 2] if len(d) % 2 else (sorted(d)[len(d) // 2 - 1] + sorted(d)[len(d) // 2]) / 2
        lo, hi = boot_median(d, rng)
        m, mlo, mhi = t_interval(d)
        rate = sorted(rs[r][0] for r in rounds)[len(rounds) // 2]
        ns = sorted(rs[r][1] for r in rounds)[len(rounds) // 2]
        print(f"| {w} | {rate:,.0f} | {ns:,.0f} | {med:+,.1f} [{lo:+,.1f}, {hi:+,.1f}] | {m:+,.1f} [{mlo:+,.1f}, {mhi:+,.1f}] |")
    print("rounds (flood ns/drop):")
    for w, rs in res.items():
        print(f"  {w}: {[round(rs[r][1]) for r in rounds]}")


if __name__ == "__main__":
    main()
