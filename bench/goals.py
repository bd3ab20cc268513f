# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""The speed goals the benches check: each printed with PASS or FAIL, and kept for bench/results/*.json."""

from __future__ import annotations

import json
import os

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def goal(name, value, limit, at_most=True):
    """Print `goal NAME: VALUE (<= LIMIT) PASS` and return it as a record."""
    passed = value <= limit if at_most else value >= limit
    print(f"goal {name}: {value:.2f} ({'<=' if at_most else '>='} {limit}) {'PASS' if passed else 'FAIL'}", flush=True)
    return {"name": name, "value": round(value, 3), "limit": limit, "at_most": at_most, "passed": passed}


def write(bench, report):
    """bench/results/BENCH.json; returns its path relative to the repository."""
    os.makedirs(RESULTS, exist_ok=True)
    path = os.path.join(RESULTS, f"{bench}.json")
    with open(path, "w") as handle:
        json.dump(report, handle, indent=2)
    print(f"written: bench/results/{bench}.json")
    return path
