#!/usr/bin/python3
"""Plots vdpa-testpmd --json results: median suspend (and/or resume) time
against virtq count, one line per strategy, with matplotlib (Debian's
python3-matplotlib; the format follows the output's extension, .svg or
.png).

  tools/plot.py -o suspend.svg results-q8.json results-q16.json results-q32.json
  tools/plot.py -o both.svg --op both --log-y results-*.json

Each input is one run's object (app/vdpa-testpmd/results.schema.json); every
entry of its "results" with samples > 0 becomes a point (queues, median_ms).
Points with the same strategy, op and queues from several files are merged
by taking the median of their medians. Dashed lines: the PMD's ideal time
for the profile, when the device reports one. Each line is an SVG group
with the id `series-<op>-<strategy>` (`series-<op>-ideal`).
"""
import argparse
import json
import statistics
import sys

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

COLORS = {"sequential": "#d62728", "threads": "#ff7f0e", "async": "#1f77b4",
          "mixed": "#7f7f7f"}
plt.rcParams.update({"svg.fonttype": "none",        # text stays text
                     "svg.hashsalt": "mlx5async"})  # the same input, the same file


def load(paths):
    """{op: {strategy: {queues: [medians]}}} and {op: {queues: [ideals]}}."""
    data, ideal = {}, {}
    for path in paths:
        with open(path) as f:
            doc = json.load(f)
        for r in doc.get("results", []):
            if not r.get("samples") or r.get("median_ms") is None:
                continue
            q = r["queues"]
            data.setdefault(r["op"], {}).setdefault(r["strategy"], {}).setdefault(q, []).append(
                r["median_ms"])
            if r.get("ideal_ms"):
                ideal.setdefault(r["op"], {}).setdefault(q, []).append(r["ideal_ms"])
    return data, ideal


def medians(points):
    """[(queues, median)] in queue order."""
    return [(q, statistics.median(v)) for q, v in sorted(points.items())]


def panel(ax, op, series, ideal, log_y):
    order = sorted(series, key=lambda s: list(COLORS).index(s) if s in COLORS else 99)
    xs = set()
    for s in order:
        line = medians(series[s])
        xs |= {q for q, _ in line}
        ax.plot([q for q, _ in line], [v for _, v in line], marker="o", linewidth=2,
                color=COLORS.get(s, "#2ca02c"), label=s, gid=f"series-{op}-{s}")
    if ideal:
        line = medians(ideal)
        ax.plot([q for q, _ in line], [v for _, v in line], linestyle="--", color="#555555",
                label="ideal", gid=f"series-{op}-ideal")
    ax.set_title(f"{op} time (median) vs virtqs")
    ax.set_xlabel("virtqs per batch")
    ax.set_ylabel("ms (log)" if log_y else "ms")
    ax.set_xticks(sorted(xs))
    if log_y:
        ax.set_yscale("log")
        plain = FuncFormatter(lambda v, _: f"{v:g}")  # 2, not 2x10^0
        ax.yaxis.set_major_formatter(plain)
        ax.yaxis.set_minor_formatter(plain)
    else:
        ax.set_ylim(bottom=0)
    ax.grid(True, color="#dddddd")
    ax.legend()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+", help="vdpa-testpmd --json outputs")
    ap.add_argument("-o", "--output", required=True, help="file to write (.svg, .png)")
    ap.add_argument("--op", choices=["suspend", "resume", "both"], default="suspend")
    ap.add_argument("--log-y", action="store_true", help="logarithmic time axis")
    a = ap.parse_args()
    data, ideal = load(a.files)
    ops = ["suspend", "resume"] if a.op == "both" else [a.op]
    ops = [op for op in ops if data.get(op)]
    if not ops:
        print("plot: no successful samples in the inputs", file=sys.stderr)
        return 1
    fig, axes = plt.subplots(1, len(ops), figsize=(6.4 * len(ops), 4.2), squeeze=False)
    for ax, op in zip(axes[0], ops):
        panel(ax, op, data[op], ideal.get(op, {}), a.log_y)
    fig.tight_layout()
    fig.savefig(a.output)
    plt.close(fig)
    print(f"plot: {a.output} ({', '.join(ops)}; {len(a.files)} run(s))")
    return 0


if __name__ == "__main__":
    sys.exit(main())
