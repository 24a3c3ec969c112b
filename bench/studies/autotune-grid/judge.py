#!/usr/bin/env python3
"""Judge autotune searches against the exhaustive grid over the same levels.

    python3 bench/studies/autotune-grid/judge.py bench/out/autotune-grid
    python3 bench/studies/autotune-grid/judge.py SEARCHES --grids G1 G2 [--searches S2 ...]

Reads DIR/grid/results.json (`nettune experiment` of tput.toml) and every
DIR/search-*/results.json (`nettune autotune`), and DIR/pass2-N/results.json
where there (a second search `--from` search-N: its kept setting on top, its
runs added). The grid's best cell is the
one with the highest median throughput; a search "found" it when the cell of
its kept setting is that cell, or when that cell's grid median lies inside
the best cell's 95 % interval of the median (the experiment's own bootstrap
interval). The cost is the search's runs over the grid's runs. Prints one
Markdown table.

With --grids, the grids named (each a `nettune experiment` output directory
of the same file, run in other labs or orders) are pooled cell by cell: a
cell's estimate is the median of all its runs, its interval a percentile
bootstrap 95 % interval of that median (4000 resamples, seeded), and the
cost is against one grid's runs. --searches adds the search-* of other
directories to the table.
"""
import glob
import json
import os
import random
import re
import statistics
import sys


def norm(level):
    """A level as text both files agree on: numbers only for lists."""
    if isinstance(level, bool):
        return "true" if level else "false"
    s = str(level).strip()
    nums = re.findall(r"\d+", s)
    if s.startswith("[") or (len(nums) > 1 and " " in s):
        return " ".join(nums)
    return s


def grid_cells(doc):
    cells = []
    for c in doc["cells"]:
        if c["status"].get("state") != "done":
            continue
        st = next((s for s in c["stats"] if s["metric"] == "throughput"), None)
        if not st or not st.get("median_ci"):
            continue
        ci = st["median_ci"]
        levels = {k: norm(v) for k, v in c["levels"]}
        cells.append((levels, ci["estimate"], ci["lo"], ci["hi"], len(st["values"])))
    return cells


def median_interval(xs, n=4000):
    rnd = random.Random(1)
    xs = sorted(xs)
    reps = sorted(statistics.median(rnd.choices(xs, k=len(xs))) for _ in range(n))
    return statistics.median(xs), reps[int(0.025 * n)], reps[min(n - 1, int(0.975 * n))]


def pooled_cells(docs):
    """The cells of several grids of one design, their runs pooled."""
    runs = {}
    for doc in docs:
        for c in doc["cells"]:
            if c["status"].get("state") != "done":
                continue
            st = next((s for s in c["stats"] if s["metric"] == "throughput"), None)
            if not st:
                continue
            key = tuple(sorted((k, norm(v)) for k, v in c["levels"]))
            runs.setdefault(key, []).extend(st["values"])
    cells = []
    for key, xs in runs.items():
        if len(xs) >= 3:
            est, lo, hi = median_interval(xs)
            cells.append((dict(key), est, lo, hi, len(xs)))
    return cells


def main(out, grids=(), searches=()):
    grid = json.load(open(os.path.join(out, "grid", "results.json")))
    cells = grid_cells(grid)
    if grids:
        docs = [json.load(open(os.path.join(g, "results.json"))) for g in grids]
        one = sum(c[4] for c in cells)
        cells = pooled_cells(docs)
        print(f"pooled: {len(docs)} grids ({', '.join(grids)}), {sum(c[4] for c in cells)} runs; cost against one grid's {one}")
    if not cells:
        sys.exit("judge: no done cell with a throughput interval in the grid")
    runs = sum(c[4] for c in cells) if not grids else one
    base_idx = grid.get("baseline_cell", 0)
    baseline = next(
        (c for c in grid["cells"] if c["index"] == base_idx), grid["cells"][0]
    )
    base_levels = {k: norm(v) for k, v in baseline["levels"]}
    base_med = next(c[1] for c in cells if c[0] == base_levels)
    pct = lambda v: (v / base_med - 1.0) * 100.0
    best = max(cells, key=lambda c: c[1])
    label = lambda lv: " ".join(
        f"{k}={v}" for k, v in sorted(lv.items()) if base_levels.get(k) != v
    ) or "baseline"
    print(f"grid: {len(cells)} cells, {runs} runs; baseline {label(base_levels)} median {base_med / 1e9:.2f} Gbit/s")
    print(
        f"grid best: {label(best[0])} {pct(best[1]):+.1f} % "
        f"[{pct(best[2]):+.1f}, {pct(best[3]):+.1f}] (median and 95 % interval of the median, vs the baseline's median)"
    )
    inside = sorted(
        (c for c in cells if best[2] <= c[1] <= best[3]), key=lambda c: -c[1]
    )
    print("cells whose median lies in that interval: " + "; ".join(
        f"{label(c[0])} {pct(c[1]):+.1f} %" for c in inside))
    print()
    print("| seed | search runs | ratio to the grid | kept | its grid cell | found |")
    print("| ---: | ---: | ---: | --- | ---: | --- |")
    found_n = cheap_n = n = n2 = found2 = 0
    paths = []
    for d in (out, *searches):
        paths += sorted(glob.glob(os.path.join(d, "search-*", "results.json")))
    for path in paths:
        docs = [json.load(open(path))]
        rows = [("", docs[0])]
        seed_dir = os.path.basename(os.path.dirname(path))
        where = f" ({os.path.basename(os.path.dirname(os.path.dirname(path)))})" if searches else ""
        second = os.path.join(out, seed_dir.replace("search-", "pass2-"), "results.json")
        if os.path.exists(second):
            rows.append((" + a second pass (--from)", json.load(open(second))))
        levels = dict(base_levels)
        kept_all = []
        used = 0
        for suffix, doc in rows:
            seed = doc.get("workload", {}).get("seed", "?")
            for a in doc.get("accepted", []):
                levels[a["knob"]] = norm(a["level"])
                kept_all.append(f"{a['knob']}={a['level']}")
            used += doc.get("runs_used", len(doc.get("trace", [])))
            cell = next((c for c in cells if c[0] == levels), None)
            kept = ", ".join(kept_all) or "nothing"
            if cell is None:
                verdict, at = "not a grid cell", "-"
            else:
                at = f"{pct(cell[1]):+.1f} %"
                if cell[0] == best[0]:
                    verdict = "same"
                elif best[2] <= cell[1] <= best[3]:
                    verdict = "within interval"
                else:
                    verdict = "no"
            if not suffix:
                n += 1
                found_n += verdict in ("same", "within interval")
                cheap_n += used * 3 <= runs
            else:
                n2 += 1
                found2 += verdict in ("same", "within interval")
            print(f"| {seed}{where}{suffix} | {used} | {used / runs:.2f} | {kept} | {at} | {verdict} |")
    print()
    print(f"found the grid's best (or within its interval) on {found_n}/{n}; a third of the grid's runs or fewer on {cheap_n}/{n}")
    if n2:
        print(f"with a second pass from the kept setting: found on {found2}/{n2}")


if __name__ == "__main__":
    args = sys.argv[1:]
    out = args.pop(0) if args and not args[0].startswith("--") else "bench/out/autotune-grid"
    grids, searches, into = [], [], None
    for a in args:
        if a in ("--grids", "--searches"):
            into = grids if a == "--grids" else searches
        elif into is None:
            sys.exit(f"judge: unexpected argument {a!r}")
        else:
            into.append(a)
    main(out, grids, searches)
