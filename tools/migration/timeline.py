"""The timeline picture of `./run migrate` (SVG, standard library only):
for each strategy, its median-network-downtime migration, with one lane per
host. Time is in ms from the start of QEMU's downtime (the source's
completion minus its downtime figure). Ticks: QEMU's events; bars: the
PMD's downtime ledger phases; shaded: QEMU's downtime (grey) and the
network downtime, source stop to destination RDY (hatched)."""
import statistics
from xml.sax.saxutils import escape

W = 980
ML, MR = 150, 30
LANE, GAP, TOP_, AXIS = 46, 14, 34, 56
STOP_BARS = [("stop_requested", "suspend_issued", "prepare", "#9edae5"),
             ("suspend_issued", "suspend_done", "suspend batch", "#1f77b4"),
             ("suspend_done", "bases_handed_back", "bases to vhost", "#aec7e8"),
             ("bases_handed_back", "used_rings_logged", "used rings logged", "#17becf")]
START_BARS = [("start_requested", "memory_registered", "memory", "#ffbb78"),
              ("memory_registered", "virtqs_created", "virtqs", "#c49c94"),
              ("virtqs_created", "all_ready", "start batch", "#ff7f0e"),
              ("all_ready", "notifiers_set", "host notifiers", "#98df8a")]
# Ledger moments drawn as ticks on the destination lane: dev_conf returns
# once the start is posted; the guest's announce comes after the start.
LEDGER_TICKS_DST = [("conf_returned", "dev_conf returned"), ("announced", "announce")]
TICKS_SRC = [("source_stop", "STOP"), ("source_completed", "completed")]
# Where each tick's label goes (px below the lane top): labels of nearby
# events must not overlap.
LABEL_Y = {"STOP": 11, "completed": 44, "RESUME": 11, "dev_conf returned": 44, "announce": 11}
TICKS_DST = [("destination_completed", "completed"), ("destination_resume", "RESUME")]


def _median_run(rows, strategy):
    rs = [r for r in rows if r["strategy"] == strategy]
    med = statistics.median_low([r["network_downtime_ms"] for r in rs])
    return next(r for r in rs if r["network_downtime_ms"] == med)


def _phases(bars):
    return {p for a, b, _, _ in bars for p in (a, b)}


def _span(r):
    """(t0, first, last): the migration's moments in ms from t0; only the
    source's stop and the destination's start count (each ledger also holds
    the other half from earlier connections)."""
    t0 = r["qemu_events"]["downtime_start"]
    times = [t for t in r["qemu_events"].values() if t]
    times += [t for k, t in r["source_ledger"].items() if k in _phases(STOP_BARS)]
    times += [t for k, t in r["destination_ledger"].items()
              if k in _phases(START_BARS) | {p for p, _ in LEDGER_TICKS_DST}]
    end = max(times + [t0 + r["downtime_ms"] / 1e3])
    start = min(times)
    return t0, (start - t0) * 1e3, (end - t0) * 1e3


def write(path, rows, strategies):
    runs = [_median_run(rows, s) for s in strategies]
    spans = [_span(r) for r in runs]
    lo = min(s[1] for s in spans)
    hi = max(s[2] for s in spans)
    pad = (hi - lo) * 0.04 or 1
    lo, hi = lo - pad, hi + pad
    panel = 2 * LANE + GAP + 30
    height = TOP_ + panel * len(runs) + AXIS
    sx = lambda ms: ML + (ms - lo) / (hi - lo) * (W - ML - MR)  # noqa: E731
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{height}" '
           f'font-family="sans-serif" font-size="11">',
           '<rect width="100%" height="100%" fill="white"/>',
           f'<text x="{W / 2}" y="18" text-anchor="middle" font-size="13">live migration, '
           f'{runs[0]["rings"]} virtqs: median run per strategy '
           '(ms from the start of QEMU\'s downtime)</text>']
    for i, (r, (t0, _, _)) in enumerate(zip(runs, spans)):
        y0 = TOP_ + i * panel
        out.append(f'<text x="8" y="{y0 + 12}" font-weight="bold">{escape(r["strategy"])}: '
                   f'QEMU downtime {r["downtime_ms"]:.0f} ms, network downtime '
                   f'{r["network_downtime_ms"]:.1f} ms</text>')
        out.append(f'<rect x="{sx(0):.1f}" y="{y0 + 18}" width="{sx(r["downtime_ms"]) - sx(0):.1f}" '
                   f'height="{2 * LANE + GAP}" fill="#eeeeee"/>')
        n0 = (r["source_ledger"]["stop_requested"] - t0) * 1e3
        out.append(f'<rect x="{sx(n0):.1f}" y="{y0 + 18 + 2 * LANE + GAP - 4}" '
                   f'width="{sx(n0 + r["network_downtime_ms"]) - sx(n0):.1f}" height="4" '
                   'fill="#7f7f7f"><title>network downtime</title></rect>')
        lanes = [("source host", r["source_ledger"], STOP_BARS, TICKS_SRC),
                 ("destination host", r["destination_ledger"], START_BARS, TICKS_DST)]
        for k, (name, led, bars, ticks) in enumerate(lanes):
            ly = y0 + 18 + k * (LANE + GAP)
            out.append(f'<text x="8" y="{ly + LANE / 2 + 4}">{name}</text>')
            out.append(f'<line x1="{ML}" y1="{ly + LANE}" x2="{W - MR}" y2="{ly + LANE}" stroke="#999"/>')
            for a, b, label, color in bars:
                if a not in led or b not in led:
                    continue
                x1, x2 = sx((led[a] - t0) * 1e3), sx((led[b] - t0) * 1e3)
                out.append(f'<rect x="{x1:.1f}" y="{ly + 16}" width="{max(x2 - x1, 1.0):.1f}" '
                           f'height="16" fill="{color}"><title>{escape(label)}: '
                           f'{(led[b] - led[a]) * 1e3:.3f} ms</title></rect>')
            marks = [(r["qemu_events"].get(key), "QEMU " + label, label, "#d62728") for key, label in ticks]
            if k == 1:
                marks += [(led.get(key), label, label, "#2ca02c") for key, label in LEDGER_TICKS_DST]
            for t, text, label, color in marks:
                if t is None:
                    continue
                x = sx((t - t0) * 1e3)
                out.append(f'<line x1="{x:.1f}" y1="{ly + 2}" x2="{x:.1f}" y2="{ly + LANE}" '
                           f'stroke="{color}" stroke-width="1.5"/>')
                out.append(f'<text x="{x + 3:.1f}" y="{ly + LABEL_Y[label]}" fill="{color}">'
                           f'{escape(text)}</text>')
    # Axis and the legend of bar colours.
    ay = height - AXIS + 6
    out.append(f'<line x1="{ML}" y1="{ay}" x2="{W - MR}" y2="{ay}" stroke="black"/>')
    step = _step(hi - lo)
    t = (lo // step + 1) * step
    while t < hi:
        x = sx(t)
        out.append(f'<line x1="{x:.1f}" y1="{ay}" x2="{x:.1f}" y2="{ay + 4}" stroke="black"/>')
        out.append(f'<text x="{x:.1f}" y="{ay + 16}" text-anchor="middle">{t:g}</text>')
        t += step
    for row, bars in enumerate((STOP_BARS, START_BARS)):
        lx = ML
        ly = ay + 22 + 14 * row
        out.append(f'<text x="8" y="{ly + 9}">{"source" if row == 0 else "destination"}:</text>')
        for _, _, label, color in bars:
            out.append(f'<rect x="{lx}" y="{ly}" width="10" height="10" fill="{color}"/>')
            out.append(f'<text x="{lx + 13}" y="{ly + 9}">{escape(label)}</text>')
            lx += 13 + 7 * len(label) + 14
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def _step(span):
    for s in (0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000):
        if span / s <= 12:
            return s
    return 10000
