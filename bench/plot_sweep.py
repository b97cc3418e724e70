#!/usr/bin/env python3
"""Draws `tiledsl-bench sweep --csv=...` output: for each workload, ours and the reference
measured beside it (GB/s or TFLOP/s) against the problem size, one image per workload.

    python3 bench/plot_sweep.py bench/results/2026-12-03-run44-sweep.csv --out docs/img
    python3 bench/plot_sweep.py sweep.csv --out plots --format png

SVG by default (text: it diffs and stays small in the repository); --format png for bitmaps.
Needs matplotlib (pip install matplotlib).
"""
import argparse
import csv
import os
import sys
from collections import defaultdict

# What each workload's size column means, for the x axis.
SIZE_LABEL = {
    "add": "elements (n)",
    "softmax": "columns (4096 rows)",
    "layernorm": "columns (4096 rows)",
    "matmul_bf16": "M = N = K",
    "matmul_bf16_out_bf16": "M = N = K",
    "matmul_f16_out_f16": "M = N = K",
}


def read(path):
    by_workload = defaultdict(list)
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            by_workload[row["workload"]].append(row)
    return by_workload


def plot(workload, rows, out, fmt, title_suffix):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = sorted(rows, key=lambda r: int(r["size"]))
    sizes = [int(r["size"]) for r in rows]
    unit = rows[0]["unit"]
    reference = rows[0]["reference"]
    fig, ax = plt.subplots(figsize=(6, 3.6))
    ax.plot(sizes, [float(r["ours"]) for r in rows], marker="o", label="tiledsl")
    ax.plot(sizes, [float(r["reference_value"]) for r in rows], marker="s", linestyle="--",
            label=reference + (" (same bytes)" if reference == "copy" else ""))
    ax.set_xscale("log", base=2)
    ax.set_xlabel(SIZE_LABEL.get(workload, "size"))
    ax.set_ylabel(unit)
    ax.set_ylim(bottom=0)
    ax.grid(True, which="major", alpha=0.3)
    ax.set_title(workload + title_suffix)
    ax.legend()
    fig.tight_layout()
    path = os.path.join(out, f"sweep-{workload}.{fmt}")
    # No timestamp in the SVG, so an unchanged plot is an unchanged file.
    fig.savefig(path, metadata={"Date": None} if fmt == "svg" else None)
    plt.close(fig)
    return path


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("csv", help="a CSV written by tiledsl-bench sweep --csv=PATH")
    p.add_argument("--out", default=".", help="folder for the images")
    p.add_argument("--format", default="svg", choices=["svg", "png"])
    p.add_argument("--title", default="", help="appended to each title, e.g. ', H200 2026-12-03'")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    data = read(a.csv)
    if not data:
        sys.exit(f"{a.csv}: no rows")
    for workload, rows in data.items():
        print(plot(workload, rows, a.out, a.format, a.title))


if __name__ == "__main__":
    main()
