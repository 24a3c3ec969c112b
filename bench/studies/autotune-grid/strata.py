#!/usr/bin/env python3
"""Does comparing runs within their limit state narrow the intervals?

    python3 bench/studies/autotune-grid/strata.py DIR [DIR...]

Reads each DIR/grid/results.json (the tcp-stream grid of tput.toml) and,
inside the unpinned cubic cells (cpu_pin off, where runs fall into two
states), compares each refinement level with the
factor's first level, pooled over every run (as the search and judge.py
do) and stratified by what limited each run (`limited_by`: the server's
recv thread or the client's send thread): the median ratio within each
state, combined as a geometric mean weighted by the state's share of both
arms' runs. Bootstrap 95 % intervals, resampling within states. Then the
same on draws of 12 runs an arm (a race's size in the search), to compare
the widths the search would see. Also prints each level's share of
receiver-bound runs: a level that moves runs between states has an effect
that stratifying hides.
"""
import math
import random
import statistics
import sys

from pooled import grid_runs

med = statistics.median


def pooled(a, b):
    return math.log(med([v for v, _ in a]) / med([v for v, _ in b]))


def stratified(a, b):
    states = {s for _, s in a} & {s for _, s in b}
    num = den = 0.0
    for s in states:
        xa = [v for v, t in a if t == s]
        xb = [v for v, t in b if t == s]
        if len(xa) < 2 or len(xb) < 2:
            continue
        w = len(xa) + len(xb)
        num += w * math.log(med(xa) / med(xb))
        den += w
    return num / den if den else None


def resample(xs, rnd, within):
    if not within:
        return [rnd.choice(xs) for _ in xs]
    out = []
    for s in {t for _, t in xs}:
        g = [x for x in xs if x[1] == s]
        out += [rnd.choice(g) for _ in g]
    return out


def interval(est, a, b, within, n=2000, seed=1):
    rnd = random.Random(seed)
    vals = []
    for _ in range(n):
        e = est(resample(a, rnd, within), resample(b, rnd, within))
        if e is not None:
            vals.append(e)
    if len(vals) < n * 0.9:
        return None
    vals.sort()
    return vals[int(0.025 * len(vals))], vals[int(0.975 * len(vals))]


def pct(x):
    return (math.exp(x) - 1) * 100


def show(name, e, iv):
    if e is None or iv is None:
        return f"{name} n/a"
    return f"{name} {pct(e):+.1f} % [{pct(iv[0]):+.1f}, {pct(iv[1]):+.1f}]"


RECV = "the server's recv thread"


def main(dirs):
    rows, first = [], None
    for d in dirs:
        r, first = grid_runs(d)
        rows += r
    sub = [
        (l, v, s)
        for l, v, s in rows
        if l["congestion_control"] == "cubic" and l.get("cpu_pin", "off") == "off"
    ]
    states = {}
    for _, _, s in sub:
        states[s] = states.get(s, 0) + 1
    print(f"unpinned cubic cells: {len(sub)} runs; states: {states}")
    knobs = [k for k in first if k not in ("congestion_control", "cpu_pin")]
    for k in knobs:
        b = [(v, s) for l, v, s in sub if l[k] == first[k]]
        for level in sorted({l[k] for l, _, _ in sub} - {first[k]}):
            a = [(v, s) for l, v, s in sub if l[k] == level]
            ra = sum(s == RECV for _, s in a) / len(a)
            rb = sum(s == RECV for _, s in b) / len(b)
            print(
                f"  {k}={level}: n={len(a)} vs {len(b)}; receiver-bound {ra:.0%} vs {rb:.0%}; "
                + show("pooled", pooled(a, b), interval(pooled, a, b, False))
                + "; "
                + show("stratified", stratified(a, b), interval(stratified, a, b, True))
            )
            rnd = random.Random(7)
            widths = {"pooled": [], "stratified": []}
            for i in range(40):
                da, db = rnd.sample(a, min(12, len(a))), rnd.sample(b, min(12, len(b)))
                for name, est, within in (("pooled", pooled, False), ("stratified", stratified, True)):
                    iv = interval(est, da, db, within, n=400, seed=i)
                    if iv:
                        widths[name].append(pct(iv[1]) - pct(iv[0]))
            print(
                "    12 runs an arm, 40 draws: median width "
                + ", ".join(
                    f"{n} {med(w):.0f} points ({len(w)} draws)" if w else f"{n} n/a"
                    for n, w in widths.items()
                )
            )


if __name__ == "__main__":
    main(sys.argv[1:])
