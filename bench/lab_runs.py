#!/usr/bin/env python3
"""Extract the per-run values of `nettune lab` results into the data file of
crates/model/tests/verdict_simulations.rs.

usage: bench/lab_runs.py --source "TEXT" OUT.json DIR/results.json [...]

Each results.json becomes one lab: cell label -> "workload metric" -> the
measured (non-warm-up) values of that cell's runs.
"""
import json
import sys


def lab_of(path):
    r = json.load(open(path))
    cells = {}
    for c in r["cells"]:
        out = {}
        for run in c["runs"]:
            if run.get("warmup"):
                continue
            for k, v in run["values"].items():
                out.setdefault(f'{run["workload"]} {k}', []).append(v)
        cells[c["label"]] = out
    return {"results": path, "started": r.get("started"), "warnings": r.get("warnings", []), "cells": cells}


def main(argv):
    if len(argv) < 4 or argv[0] != "--source":
        sys.exit(__doc__)
    source, out, files = argv[1], argv[2], argv[3:]
    data = {"source": source, "labs": [lab_of(f) for f in files]}
    json.dump(data, open(out, "w"), indent=1)
    print(f"{out}: {len(files)} lab(s)")


if __name__ == "__main__":
    main(sys.argv[1:])
