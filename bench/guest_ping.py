#!/usr/bin/env python3
"""The ICMP probe of an experiment's results.json, per cell: the median over runs of each
run's ping p50 (and p99), with a 95 % percentile-bootstrap interval of that median
(1000 resamples, seed 1). nettune's own table covers the metrics; the probe is per run.

    python3 bench/guest_ping.py DIR/results.json
"""
import json
import random
import statistics
import sys


def boot_ci(xs, n=1000, seed=1):
    if len(xs) < 2:
        return (float("nan"), float("nan"))
    rnd = random.Random(seed)
    meds = sorted(statistics.median(rnd.choices(xs, k=len(xs))) for _ in range(n))
    return meds[int(0.025 * n)], meds[int(0.975 * n) - 1]


def main(path):
    r = json.load(open(path))
    print("cell | n | ping p50 median ms [95 % CI] | ping p99 median ms | pings lost")
    for c in r["cells"]:
        runs = [x for x in c.get("runs", []) if not x.get("warmup") and x.get("probe")]
        p50 = [x["probe"]["p50_us"] / 1000 for x in runs if x["probe"].get("p50_us") is not None]
        p99 = [x["probe"]["p99_us"] / 1000 for x in runs if x["probe"].get("p99_us") is not None]
        lost = sum(x["probe"].get("lost", 0) for x in runs)
        sent = sum(x["probe"].get("count", 0) for x in runs)
        if not p50:
            print(f"{c['label']} | 0 | - | - | -")
            continue
        lo, hi = boot_ci(p50)
        print(
            f"{c['label']} | {len(p50)} | {statistics.median(p50):.2f} [{lo:.2f}, {hi:.2f}] | "
            f"{statistics.median(p99):.2f} | {lost}/{sent}"
        )


if __name__ == "__main__":
    main(sys.argv[1])
