#!/usr/bin/env python3
"""Device interrupts of an experiment's runs, per cell, from the raw bench JSON each run kept
(DIR/runs/cell-NNN/*.json, `cpu.interrupts` of both sides; warm-up runs, r00, left out): the
median over runs of the server's and the client's interrupts per second, and of interrupts
per transaction (server + client interrupts over the window / transactions), each with a 95 %
percentile-bootstrap interval of the median (1000 resamples, seed 1), and the interface IRQs
that fired. nettune's own table has the receiving side's rate (`irq_rate`) with the change
against the baseline; this adds the other side and the per-transaction view.

    python3 bench/guest_irq.py DIR
"""
import glob
import json
import os
import statistics
import sys

from guest_ping import boot_ci


def fmt(xs, digits):
    if not xs:
        return "-"
    lo, hi = boot_ci(xs)
    m = statistics.median(xs)
    return f"{m:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def main(d):
    r = json.load(open(os.path.join(d, "results.json")))
    print("cell | n | server irq/s [95 % CI] | client irq/s [95 % CI] | irqs per transaction (both ends) | IRQs")
    for c in r["cells"]:
        files = sorted(glob.glob(os.path.join(d, "runs", f"cell-{c['index']:03d}", "*.json")))
        srv, cli, per_tx, irqs = [], [], [], set()
        for f in files:
            if f.endswith("-r00.json"):
                continue
            b = json.load(open(f))
            s, k = b["server_side"]["cpu"].get("interrupts"), b["client"]["cpu"].get("interrupts")
            if not s or not k:
                continue
            srv.append(s["per_s"])
            cli.append(k["per_s"])
            tx = sum(x.get("msgs", 0) for x in b["results"])
            if tx > 0:
                per_tx.append((s["count"] + k["count"]) / tx)
            for side in (s, k):
                for i in side.get("ifaces", []):
                    irqs.add(f"{i['iface']}:{','.join(map(str, i['irqs']))}")
        print(f"{c['label']} | {len(srv)} | {fmt(srv, 1)} | {fmt(cli, 1)} | {fmt(per_tx, 2)} | {' '.join(sorted(irqs))}")


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main(sys.argv[1])
