# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""What the benches share: the speed goals they check, each printed with PASS or FAIL, kept for bench/results/*.json,
and the pictures they draw there."""

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


def two_panels():
    """A figure of two panels side by side, drawn without a display (matplotlib's Agg backend): (figure, (left, right))."""
    import matplotlib  # noqa: PLC0415 - only the benches that draw need it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    return plt.subplots(1, 2, figsize=(12, 4.5))


def save_figure(figure, path):
    """Every panel with its grid and legend; the figure written to path and closed."""
    import matplotlib.pyplot as plt  # noqa: PLC0415

    for axes in figure.axes:
        axes.grid(True, alpha=0.3)
        axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
