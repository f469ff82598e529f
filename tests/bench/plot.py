#!/usr/bin/python3
"""Draws the load generator's sweeps as PNG plots (python3-matplotlib).

    build/tests/halfspace_load --sweep=batch --json=batch.json
    build/tests/halfspace_load --sweep=dimension --json=dimension.json
    /usr/bin/python3 tests/bench/plot.py batch.json dimension.json --out=docs

Each row of a sweep is named "<series>, <parameter>=<value>"; each series
becomes a line of examples per second against the parameter, both axes
logarithmic. Writes <out>/throughput-<parameter>.png for each file.
"""

import argparse
import collections
import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

LABELS = {
    "batch": "examples per message",
    "d": "dimension d",
    "streams": "concurrent streams",
}


def series_of(rows):
    """{series: [(x, examples/s)]} and the parameter's name."""
    series = collections.OrderedDict()
    parameter = None
    for row in rows:
        if row["unit"] != "per_second" or "=" not in row["name"]:
            continue
        name, _, assignment = row["name"].rpartition(", ")
        parameter, _, value = assignment.partition("=")
        series.setdefault(name, []).append((float(value), row["value"]))
    return series, parameter


def plot(path, out):
    with open(path) as f:
        report = json.load(f)
    series, parameter = series_of(report["rows"])
    if not series:
        raise SystemExit("%s holds no sweep rows" % path)
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=100)
    for name, points in series.items():
        xs, ys = zip(*sorted(points))
        ax.plot(xs, ys, marker="o", label=name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(LABELS.get(parameter, parameter))
    ax.set_ylabel("examples per second")
    ax.set_title("halfspace Train stream: examples/s against %s"
                 % LABELS.get(parameter, parameter), fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.text(0.01, 0.01, report["setup"][:120], fontsize=6, alpha=0.7)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    name = os.path.join(out, "throughput-%s.png" % parameter)
    fig.savefig(name)
    print("wrote", name)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="+", help="halfspace_load --json files")
    parser.add_argument("--out", default="docs")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for path in args.reports:
        plot(path, args.out)


if __name__ == "__main__":
    main()
