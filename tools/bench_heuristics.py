#!/usr/bin/env python3
"""out/bench/heuristics.json from bm_engine's BM_Heuristics (every repetition
reported): per cell (latency profile, op, N), the all-on median and spread
(max - min of the all-on repetitions) and, per heuristic, the median with it
off. A heuristic beats the run's spread in a cell when its off-median exceeds
the all-on median by more than the all-on spread; doc/engine.md
("Heuristics") keeps one that does in some cell. Prints the Markdown tables;
the JSON carries them too, with the command and the revision bm_engine was
built at, for ./run report (tools/measured.py).

  bench_heuristics.py RAW.json OUT.json COMMAND"""
import json
import re
import statistics
import sys

NAME = re.compile(r"BM_Heuristics/off:(\w+)/latency:(\w+)/op:(\w+)/queues:(\d+)/")


def samples(raw):
    """(off, latency, op, n) -> ([measured_ms per repetition], ideal_ms)."""
    out = {}
    for b in raw["benchmarks"]:
        m = NAME.match(b["name"])
        if not m or b.get("run_type") != "iteration" or b.get("error_occurred"):
            continue
        key = (m.group(1), m.group(2), m.group(3), int(m.group(4)))
        ms, _ = out.setdefault(key, ([], b.get("ideal_ms", 0.0)))
        ms.append(b["measured_ms"])
    return out


def off_against_on(on, offs):
    """A switch off against all on, from each side's repetitions (ms): the
    medians, the all-on spread (max - min) and whether off is worse, or
    better, beyond it."""
    on_med, off_med, spread = statistics.median(on), statistics.median(offs), max(on) - min(on)
    return {"on_median_ms": on_med, "off_median_ms": off_med, "spread_ms": spread,
            "beats_spread": off_med - on_med > spread, "hurts_beyond_spread": on_med - off_med > spread}


def rows(data):
    """One row per heuristic and cell."""
    out = []
    cells = sorted({k[1:] for k in data}, key=lambda c: (c[0] != "profile", c[1] != "suspend", c[2]))
    for off in sorted({k[0] for k in data} - {"none"}):
        for cell in cells:
            if (off, *cell) not in data or ("none", *cell) not in data:
                continue
            on, ideal = data[("none", *cell)]
            offs, _ = data[(off, *cell)]
            out.append({"heuristic": off, "latency": cell[0], "op": cell[1], "n": cell[2],
                        "ideal_ms": ideal, "on_ms": on, "off_ms": offs, **off_against_on(on, offs)})
    return out


def markdown(rs, beats):
    def ratio(r, v):
        return f"{v / r['ideal_ms']:.3f}" if r["ideal_ms"] > 0 else f"{v:.3f} ms"
    lines = ["Cells: the emulator's profile (median batch / ideal) and zero modelled latency "
             "(median batch, ms); spread: max - min of the 5 all-on repetitions.", "",
             "| heuristic | latency | op | N | all-on median | off median | spread | off worse beyond spread |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rs:
        lines.append(f"| {r['heuristic']} | {r['latency']} | {r['op']} | {r['n']} | "
                     f"{ratio(r, r['on_median_ms'])} | {ratio(r, r['off_median_ms'])} | "
                     f"{ratio(r, r['spread_ms'])} | {'yes' if r['beats_spread'] else 'no'} |")
    lines += ["", "| heuristic | off worse beyond spread in some cell |", "|---|---|"]
    lines += [f"| {h} | {'yes' if k else 'no'} |" for h, k in sorted(beats.items())]
    return "\n".join(lines)


def main(raw_path, out_path, command):
    with open(raw_path) as f:
        raw = json.load(f)
    rs = rows(samples(raw))
    beats = {}
    for r in rs:
        beats[r["heuristic"]] = beats.get(r["heuristic"], False) or r["beats_spread"]
    md = markdown(rs, beats)
    ctx = raw.get("context", {})
    doc = {"command": command, "commit": ctx.get("git_revision", "unknown"), "markdown": md,
           "context": {k: ctx.get(k) for k in ("profile", "git_revision", "cpu_affinity", "num_cpus", "load_avg")},
           "rule": "beats the spread: off_median - on_median > spread (max - min of the all-on repetitions)",
           "rows": rs, "beats_spread": beats}
    with open(out_path, "w") as f:
        json.dump(doc, f, indent=1)
    print(md)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
