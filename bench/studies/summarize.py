#!/usr/bin/env python3
"""Print a Markdown table of an experiment's results.json: per cell, workload
and metric, the median with its 95 % interval (n runs), and the change from
the baseline cell with its 95 % interval and verdict. Usage:
summarize.py DIR/results.json [--cpus] (--cpus: per-CPU softirq % per cell)"""
import json
import sys

UNITS = {"bit/s": (1e6, "Mbit/s"), "1/s": (1.0, "/s"), "µs": (1.0, "µs"),
         "%": (1.0, "%"), "segments": (1.0, "segments")}


def fmt(v, unit):
    div, name = UNITS.get(unit, (1.0, unit))
    x = v / div
    if abs(x) >= 100:
        return f"{x:,.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def main(path):
    r = json.load(open(path))
    cells = {c["index"]: c for c in r["cells"]}
    print(f"| cell | workload | metric | median [95 % CI] (n) | change vs baseline [95 % CI] | verdict |")
    print("| --- | --- | --- | --- | --- | --- |")
    for i in sorted(cells):
        c = cells[i]
        label = c["label"] + (" (baseline)" if i == r["baseline_cell"] else "")
        status = c["status"]
        if status.get("state") != "done":
            print(f"| {label} | – | – | status: {json.dumps(status)} | | |")
        for s in c["stats"]:
            unit = s["unit"]
            uname = UNITS.get(unit, (1, unit))[1]
            summ, ci = s.get("summary"), s.get("median_ci")
            if not summ:
                continue
            med = fmt(summ["median"], unit)
            cis = f" [{fmt(ci['lo'], unit)}, {fmt(ci['hi'], unit)}]" if ci else ""
            cell = f"{med}{cis} {uname} ({summ['n']})"
            vs = s.get("vs_baseline")
            if vs:
                ch = vs.get("change_pct")
                d = vs["difference"]
                if ch:
                    change = f"{ch['estimate']:+.1f} % [{ch['lo']:+.1f}, {ch['hi']:+.1f}]"
                else:
                    change = f"{fmt(d['estimate'], unit)} [{fmt(d['lo'], unit)}, {fmt(d['hi'], unit)}] {uname}"
                verdict = vs["verdict"]
            else:
                change, verdict = "–", "–"
            print(f"| {label} | {s['workload']} | {s['metric']} | {cell} | {change} | {verdict} |")




def cpus(path):
    """Per cell and workload: each CPU's softirq % on the receiving side,
    median over the measured runs (and min–max)."""
    import statistics
    r = json.load(open(path))
    print("| cell | workload | softirq % per CPU: median (min–max) over runs |")
    print("| --- | --- | --- |")
    for c in sorted(r["cells"], key=lambda c: c["index"]):
        by_w = {}
        for run in c["runs"]:
            if run.get("warmup"):
                continue
            for p in run.get("cpus", []):
                by_w.setdefault(run["workload"], {}).setdefault(p["cpu"], []).append(p["softirq"])
        for w, per in by_w.items():
            parts = [f"cpu{k} {statistics.median(v):.1f} ({min(v):.1f}–{max(v):.1f})"
                     for k, v in sorted(per.items())]
            print(f"| {c['label']} | {w} | {'; '.join(parts)} |")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[2] == "--cpus":
        cpus(sys.argv[1])
    else:
        main(sys.argv[1])
