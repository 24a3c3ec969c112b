#!/usr/bin/env python3
"""What is there to find on top of cubic? Pooled estimates, not single cells.

    python3 bench/studies/autotune-grid/pooled.py bench/out/autotune-grid [bench/out/autotune-fwd]

1. The grid (DIR/grid/results.json): inside each congestion control's cells,
   every run of a level against every run of the factor's first level
   (median against median, bootstrap 95 %), and a few pooled settings
   against the baseline cell's median (the judge's reference).
2. Searches with a forward pass (SEARCHES/search-*/results.json): the runs
   of every second pass pooled, each arm against the pass's baseline arm.
"""
import glob
import json
import os
import random
import statistics
import sys


def med(xs):
    return statistics.median(xs)


def boot(a, b, n=4000):
    rnd = random.Random(1)
    out = sorted(
        (med([rnd.choice(a) for _ in a]) / med([rnd.choice(b) for _ in b]) - 1) * 100
        for _ in range(n)
    )
    return out[int(0.025 * n)], out[int(0.975 * n)]


def line(name, a, b):
    lo, hi = boot(a, b)
    return f"  {name}: n={len(a)} vs {len(b)}: {(med(a) / med(b) - 1) * 100:+.1f} % [{lo:+.1f}, {hi:+.1f}]"


def grid_runs(out):
    """Every measured run of DIR/grid as (levels, Gbit/s, limited_by), and
    the levels of cell 0, the experiment's baseline (every factor at its
    first level)."""
    doc = json.load(open(os.path.join(out, "grid", "results.json")))
    rows = []
    for c in doc["cells"]:
        lv = dict((k, str(v)) for k, v in c["levels"])
        for r in c["runs"]:
            v = r.get("values", {}).get("throughput")
            if v and not r.get("warmup"):
                rows.append((lv, v / 1e9, r.get("limited_by")))
    return rows, dict((k, str(v)) for k, v in doc["cells"][0]["levels"])


def grid(out):
    rows, first = grid_runs(out)
    rows = [(l, v) for l, v, _ in rows]
    knobs = [k for k in first if k != "congestion_control"]
    for cc in sorted({l["congestion_control"] for l, _ in rows}):
        sub = [(l, v) for l, v in rows if l["congestion_control"] == cc]
        print(f"grid, {cc}: {len(sub)} runs, median {med([v for _, v in sub]):.2f} Gbit/s")
        for k in knobs:
            b = [v for l, v in sub if l[k] == first[k]]
            for level in sorted({l[k] for l, _ in sub} - {first[k]}):
                print(line(f"{k}={level}", [v for l, v in sub if l[k] == level], b))
    base = [v for l, v in rows if l == first]
    print(f"baseline cell: n={len(base)}, median {med(base):.2f} Gbit/s")
    return rows, first, med(base)


def searches(out):
    pool = {}
    base_arm = None
    for p in sorted(glob.glob(os.path.join(out, "search-*", "results.json"))):
        d = json.load(open(p))
        passes = d.get("passes", [])
        if len(passes) < 2:
            continue
        p2 = passes[1]
        base_arm = " + ".join(p2["on_top_of"])
        for r in d["trace"][p2["first_run"]:p2["race_end"]]:
            pool.setdefault(r["arm"], []).append(r["value"] / 1e9)
    if not base_arm or base_arm not in pool:
        print(f"{out}: no second pass")
        return
    b = pool[base_arm]
    print(f"second passes pooled, against {base_arm} (n={len(b)}, median {med(b):.2f} Gbit/s):")
    for arm, v in sorted(pool.items()):
        if arm != base_arm:
            print(line(arm, v, b))


def main(argv):
    rows, first, bm = grid(argv[1] if len(argv) > 1 else "bench/out/autotune-grid")
    cc0 = first["congestion_control"]
    for name, pred in [
        ("cubic, gro 0, RPS off (NAPI defer and wmem any)",
         lambda l: l["congestion_control"] == "cubic" and l["gro_flush_timeout"] == "0" and l["rps_cpus"] == "off"),
        ("cubic, gro 20000 or 50000, RPS off",
         lambda l: l["congestion_control"] == "cubic" and l["gro_flush_timeout"] != "0" and l["rps_cpus"] == "off"),
    ]:
        a = [v for l, v in rows if pred(l)]
        if a:
            print(f"{name}: n={len(a)}, median {med(a):.2f} Gbit/s, {(med(a) / bm - 1) * 100:+.1f} % against the baseline cell ({cc0})")
    for out in argv[2:]:
        searches(out)


if __name__ == "__main__":
    main(sys.argv)
