#!/usr/bin/env python3
"""Plots vdpa-testpmd --json results: median suspend (and/or resume) time
against virtq count, one line per strategy, as an SVG (standard library
only, no matplotlib needed).

  tools/plot.py -o suspend.svg results-q8.json results-q16.json results-q32.json
  tools/plot.py -o both.svg --op both --log-y results-*.json

Each input is one run's object (app/vdpa-testpmd/results.schema.json); every
entry of its "results" with samples > 0 becomes a point (queues, median_ms).
Points with the same strategy, op and queues from several files are merged
by taking the median of their medians. Dashed lines: the PMD's ideal time
for the profile, when the device reports one.
"""
import argparse
import json
import math
import statistics
import sys
from xml.sax.saxutils import escape

COLORS = {"sequential": "#d62728", "threads": "#ff7f0e", "async": "#1f77b4",
          "mixed": "#7f7f7f"}
W, H = 640, 420            # one panel
ML, MR, MT, MB = 70, 150, 40, 55


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


def nice_ticks(lo, hi, n=5):
    span = hi - lo
    if span <= 0:
        return [lo]
    step = 10 ** math.floor(math.log10(span / n))
    for m in (1, 2, 5, 10):
        if span / (step * m) <= n:
            step *= m
            break
    t = math.floor(lo / step) * step
    out = []
    while t <= hi + step * 1e-9:
        if t >= lo - step * 1e-9:
            out.append(round(t, 10))
        t += step
    return out


def panel(op, series, ideal, x0, log_y):
    """SVG elements of one panel at horizontal offset x0."""
    pts = [(q, v) for s in series.values() for q, vs in s.items() for v in [statistics.median(vs)]]
    pts += [(q, statistics.median(v)) for q, v in ideal.items()]
    xs = sorted({q for q, _ in pts})
    ymax = max(v for _, v in pts) * 1.1
    ymin = min(v for _, v in pts) / 1.5 if log_y else 0.0
    xmin, xmax = (min(xs), max(xs)) if len(xs) > 1 else (xs[0] - 1, xs[0] + 1)
    pw, ph = W - ML - MR, H - MT - MB

    def sx(q):
        return x0 + ML + (q - xmin) / (xmax - xmin) * pw

    def sy(v):
        if log_y:
            v = max(v, ymin)
            return MT + ph - (math.log10(v) - math.log10(ymin)) / (
                math.log10(ymax) - math.log10(ymin)) * ph
        return MT + ph - (v - ymin) / (ymax - ymin) * ph

    e = [f'<text x="{x0 + W / 2}" y="22" text-anchor="middle" font-size="16">'
         f'{escape(op)} time (median) vs virtqs</text>',
         f'<rect x="{x0 + ML}" y="{MT}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>']
    yt = [10 ** k for k in range(math.floor(math.log10(ymin)), math.ceil(math.log10(ymax)) + 1)
          if ymin <= 10 ** k <= ymax] if log_y else nice_ticks(ymin, ymax)
    for t in yt:
        y = sy(t)
        e.append(f'<line x1="{x0 + ML}" x2="{x0 + ML + pw}" y1="{y:.1f}" y2="{y:.1f}" '
                 f'stroke="#ddd"/>')
        e.append(f'<text x="{x0 + ML - 6}" y="{y + 4:.1f}" text-anchor="end" '
                 f'font-size="11">{t:g}</text>')
    for q in xs:
        e.append(f'<text x="{sx(q):.1f}" y="{MT + ph + 16}" text-anchor="middle" '
                 f'font-size="11">{q}</text>')
    e.append(f'<text x="{x0 + ML + pw / 2}" y="{H - 12}" text-anchor="middle" '
             f'font-size="12">virtqs per batch</text>')
    e.append(f'<text x="{x0 + 16}" y="{MT + ph / 2}" text-anchor="middle" font-size="12" '
             f'transform="rotate(-90 {x0 + 16} {MT + ph / 2})">ms{" (log)" if log_y else ""}'
             f'</text>')
    legend_y = MT + 10
    order = sorted(series, key=lambda s: list(COLORS).index(s) if s in COLORS else 99)
    for s in order:
        c = COLORS.get(s, "#2ca02c")
        line = [(q, statistics.median(v)) for q, v in sorted(series[s].items())]
        path = " ".join(f"{sx(q):.1f},{sy(v):.1f}" for q, v in line)
        e.append(f'<polyline points="{path}" fill="none" stroke="{c}" stroke-width="2"/>')
        for q, v in line:
            e.append(f'<circle cx="{sx(q):.1f}" cy="{sy(v):.1f}" r="3.5" fill="{c}">'
                     f'<title>{escape(s)} {q} virtqs: {v:.3f} ms</title></circle>')
        e.append(f'<line x1="{x0 + W - MR + 12}" x2="{x0 + W - MR + 32}" y1="{legend_y}" '
                 f'y2="{legend_y}" stroke="{c}" stroke-width="2"/>')
        e.append(f'<text x="{x0 + W - MR + 38}" y="{legend_y + 4}" font-size="12">'
                 f'{escape(s)}</text>')
        legend_y += 20
    if ideal:
        line = [(q, statistics.median(v)) for q, v in sorted(ideal.items())]
        path = " ".join(f"{sx(q):.1f},{sy(v):.1f}" for q, v in line)
        e.append(f'<polyline points="{path}" fill="none" stroke="#555" stroke-dasharray="5,4"/>')
        e.append(f'<line x1="{x0 + W - MR + 12}" x2="{x0 + W - MR + 32}" y1="{legend_y}" '
                 f'y2="{legend_y}" stroke="#555" stroke-dasharray="5,4"/>')
        e.append(f'<text x="{x0 + W - MR + 38}" y="{legend_y + 4}" font-size="12">ideal</text>')
    return e


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+", help="vdpa-testpmd --json outputs")
    ap.add_argument("-o", "--output", required=True, help="SVG file to write")
    ap.add_argument("--op", choices=["suspend", "resume", "both"], default="suspend")
    ap.add_argument("--log-y", action="store_true", help="logarithmic time axis")
    a = ap.parse_args()
    data, ideal = load(a.files)
    ops = ["suspend", "resume"] if a.op == "both" else [a.op]
    ops = [op for op in ops if data.get(op)]
    if not ops:
        print("plot: no successful samples in the inputs", file=sys.stderr)
        return 1
    els = []
    for i, op in enumerate(ops):
        els += panel(op, data[op], ideal.get(op, {}), i * W, a.log_y)
    with open(a.output, "w") as f:
        f.write(f'<svg xmlns="http://www.w3.org/2000/svg" width="{W * len(ops)}" height="{H}" '
                f'font-family="sans-serif">\n<rect width="100%" height="100%" fill="white"/>\n')
        f.write("\n".join(els))
        f.write("\n</svg>\n")
    print(f"plot: {a.output} ({', '.join(ops)}; {len(a.files)} run(s))")
    return 0


if __name__ == "__main__":
    sys.exit(main())
