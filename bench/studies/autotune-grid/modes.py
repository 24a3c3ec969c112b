#!/usr/bin/env python3
"""The states of modes.toml's runs (nettune experiment output DIR).

    python3 bench/studies/autotune-grid/modes.py DIR

Per cell: what limited its runs (results.json runs[].limited_by; for an
engine without it, the same rule on the raw bench JSON's worker CPU times)
with each group's median; then, for the pinned cell, its runs grouped by
the state of the unpinned runs just before and after them in run order, to
tell a state of the unpinned placement from the whole machine slowing down.
"""
import json
import statistics
import sys


def state(run, path):
    """limited_by, or for results of an engine without it the same rule
    applied to the raw bench JSON's worker CPU times (docs/engine.md)."""
    if run.get("limited_by"):
        return run["limited_by"]
    b = json.load(open(path + "/" + run["raw"]))
    secs = b["config"]["duration_ms"] / 1000
    busiest = {}
    for end, side in (("client", b["client"]), ("server", b["server_side"])):
        ws = [((w["user_us"] + w["sys_us"]) / secs / 1e4, w["role"], w["cpu"]) for w in side["workers"]]
        busiest[end] = max(ws, key=lambda x: x[0]) if ws else (0, None, None)
    (c, s) = (busiest["client"], busiest["server"])
    if c[2] is not None and c[2] == s[2] and c[0] + s[0] >= 90:
        return f"CPU {c[2]}, shared by both threads"
    for end, a, b in (("client", c, s), ("server", s, c)):
        if a[0] >= 80 and a[0] - b[0] >= 20:
            return f"the {end}'s {a[1]} thread"
    return "no single thread"


def main(path):
    d = json.load(open(path + "/results.json"))
    runs = []
    for c in d["cells"]:
        pinned = dict(c["levels"]).get("cpu_pin") != "off"
        for r in c["runs"]:
            runs.append((r["repeat"], r["start_time"], pinned, r))
    runs.sort(key=lambda x: (x[0], x[1]))
    for pinned in (False, True):
        mine = [r for _, _, p, r in runs if p == pinned]
        groups = {}
        for r in mine:
            groups.setdefault(state(r, path), []).append(r["values"]["throughput"] / 1e9)
        print("pinned" if pinned else "unpinned", f"({len(mine)} runs):")
        for k, v in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            print(f"  {k}: {len(v)} runs, median {statistics.median(v):.1f} Gbit/s "
                  f"({min(v):.1f}-{max(v):.1f})")
    unpinned = [(i, state(r, path)) for i, (_, _, p, r) in enumerate(runs) if not p]
    seq = [s for _, s in unpinned]
    switches = sum(a != b for a, b in zip(seq, seq[1:]))
    print(f"unpinned state changes between consecutive unpinned runs: {switches} of {len(seq) - 1}")
    by = {}
    for i, (_, _, p, r) in enumerate(runs):
        if not p:
            continue
        near = [s for j, s in unpinned if abs(j - i) == 1]
        key = near[0] if len(set(near)) == 1 and near else "mixed"
        by.setdefault(key, []).append(r["values"]["throughput"] / 1e9)
    print("pinned runs by the state of their unpinned neighbours:")
    for k, v in sorted(by.items(), key=lambda kv: -len(kv[1])):
        print(f"  {k}: {len(v)} runs, median {statistics.median(v):.1f} Gbit/s")


if __name__ == "__main__":
    main(sys.argv[1])
