#!/usr/bin/env python3
"""Markdown tables from bench/bm_engine JSON (Google Benchmark, aggregates):
per op and N, the median of each strategy, measured/ideal, the machine's
floor for one thread per blocking command (bm_floor.cpp) and async/floor, and
the speed-up of async over sequential measured in the same run; then the
targets.
With several JSON files (several runs): each target's median and range."""
import json
import re
import sys

NAME = re.compile(r"BM_(Suspend|Resume)/strategy:(\w+)/queues:(\d+)/")


def main(path):
    with open(path) as f:
        doc = json.load(f)
    rows = {}
    overhead = []
    for b in doc["benchmarks"]:
        if b.get("aggregate_name") != "median":
            continue
        m = NAME.match(b["name"])
        if m:
            op, strat, n = m.group(1).lower(), m.group(2), int(m.group(3))
            r = rows.setdefault((op, n), {"ideal": b.get("ideal_ms")})
            r[strat] = b.get("measured_ms", b["real_time"])
            r[strat + "_peak"] = b.get("peak_inflight")
        elif b["name"].startswith("BM_EngineOverhead"):
            overhead.append((b["name"].split("/repeats")[0], b.get("us_per_cmd"),
                             b.get("cpu_us_per_cmd")))
    ctx = doc.get("context", {})
    print(f"profile {ctx.get('profile', '?')}, git {ctx.get('git_revision', '?')}, "
          f"{ctx.get('num_cpus', '?')} CPUs (process on CPUs {ctx.get('cpu_affinity', '?')}), "
          f"load {ctx.get('load_avg', '?')}")
    print()
    print("| op | N | ideal ms | async ms | async/ideal | floor ms | floor/ideal | async/floor "
          "| sequential ms | threads ms | seq/async | peak |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    fmt = lambda v: "-" if v is None else f"{v:.2f}"
    for (op, n) in sorted(rows, key=lambda k: (k[0] != "suspend", k[1])):
        r = rows[(op, n)]
        a, s, t, i = r.get("async"), r.get("sequential"), r.get("threads"), r.get("ideal")
        fl = r.get("floor")
        ratio = f"{a / i:.2f}" if a and i else "-"
        fl_ratio = f"{fl / i:.2f}" if fl and i else "-"
        over_floor = f"{a / fl:.2f}" if a and fl else "-"
        speed = f"{s / a:.1f}x" if a and s else "-"
        peak = r.get("async_peak")
        print(f"| {op} | {n} | {fmt(i)} | {fmt(a)} | {ratio} | {fmt(fl)} | {fl_ratio} | {over_floor} "
              f"| {fmt(s)} | {fmt(t)} | {speed} | "
              f"{'-' if peak is None else int(peak)} |")
    if overhead:
        print()
        print("| benchmark | us/cmd (wall) | CPU us/cmd |")
        print("|---|---|---|")
        for name, w, c in overhead:
            print(f"| {name} | {fmt(w)} | {fmt(c)} |")
    def get(op, n, k):
        return rows.get((op, n), {}).get(k)
    checks = []
    for op, n, bound in [("suspend", 32, 1.10), ("resume", 32, 1.10), ("suspend", 1024, 1.15)]:
        a, i = get(op, n, "async"), get(op, n, "ideal")
        if a and i:
            checks.append((f"N={n} async {op} <= {bound} x ideal", f"{a / i:.3f}x", a / i <= bound))
    for op, n, bound in [("suspend", 32, 14), ("resume", 32, 10)]:
        a, s = get(op, n, "async"), get(op, n, "sequential")
        if a and s:
            checks.append((f"N={n} async {op} >= {bound}x sequential", f"{s / a:.1f}x", s / a >= bound))
    if overhead:
        worst = max(w for _, w, _ in overhead if w is not None)
        checks.append(("engine overhead <= 5 us/cmd at zero latency", f"{worst:.2f} us", worst <= 5))
    print()
    print("| target | measured | met |")
    print("|---|---|---|")
    for name, v, ok in checks:
        print(f"| {name} | {v} | {'yes' if ok else 'no'} |")


COST = re.compile(r"BM_HistogramCost/backend:(\w+)/histograms:(on|off)/queues:(\d+)")


def histograms(path):
    """The --histograms run: per backend and N the engine's median us/cmd
    with the histograms on and off and the difference, then what recording
    one command costs alone."""
    with open(path) as f:
        doc = json.load(f)
    cells, record = {}, None
    for b in doc["benchmarks"]:
        if b.get("aggregate_name") != "median":
            continue
        m = COST.match(b["name"])
        if m:
            cells.setdefault((m.group(1), int(m.group(3))), {})[m.group(2)] = (b["us_per_cmd"], b["cpu_us_per_cmd"])
        elif b["name"].startswith("BM_HistogramRecord"):
            record = b.get("ns_per_cmd")
    ctx = doc.get("context", {})
    print(f"git {ctx.get('git_revision', '?')}, load {ctx.get('load_avg', '?')}")
    print()
    print("| backend | N | on us/cmd | off us/cmd | on - off us/cmd (wall) | on - off (CPU) |")
    print("|---|---|---|---|---|---|")
    for (backend, n), v in sorted(cells.items()):
        if "on" in v and "off" in v:
            (on, on_cpu), (off, off_cpu) = v["on"], v["off"]
            print(f"| {backend} | {n} | {on:.2f} | {off:.2f} | {on - off:+.3f} | {on_cpu - off_cpu:+.3f} |")
    if record is not None:
        print()
        print(f"recording one command alone (BM_HistogramRecord): {record:.1f} ns")


def targets(path):
    """The target ratios of one run: {name: value}."""
    with open(path) as f:
        doc = json.load(f)
    rows, worst = {}, None
    for b in doc["benchmarks"]:
        if b.get("aggregate_name") != "median":
            continue
        m = NAME.match(b["name"])
        if m:
            rows[(m.group(1).lower(), m.group(2), int(m.group(3)))] = b.get("measured_ms")
            rows[(m.group(1).lower(), "ideal", int(m.group(3)))] = b.get("ideal_ms")
        elif b["name"].startswith("BM_EngineOverhead") and b.get("us_per_cmd") is not None:
            worst = max(worst or 0, b["us_per_cmd"])
    out = {}
    for op, n in [("suspend", 32), ("resume", 32), ("suspend", 1024)]:
        a, i = rows.get((op, "async", n)), rows.get((op, "ideal", n))
        if a and i:
            out[f"N={n} async {op} / ideal"] = a / i
        fl = rows.get((op, "floor", n))
        if fl and i:
            out[f"N={n} floor {op} / ideal (thread per command, no engine)"] = fl / i
    for op in ["suspend", "resume"]:
        a, s = rows.get((op, "async", 32)), rows.get((op, "sequential", 32))
        if a and s:
            out[f"N=32 sequential / async {op}"] = s / a
    if worst is not None:
        out["engine overhead us/cmd (worst)"] = worst
    return out


LOOPBACK = re.compile(r"BM_Loopback/ring:(split|packed)/(\d+)")


def datapath(path):
    """The --datapath run: the emulator's loopback per ring layout and
    payload size, medians, packed's time per packet over split's."""
    with open(path) as f:
        doc = json.load(f)
    cells = {}
    for b in doc["benchmarks"]:
        m = LOOPBACK.match(b["name"])
        if m and b.get("aggregate_name") == "median":
            cells.setdefault(int(m.group(2)), {})[m.group(1)] = b["s_per_packet"] * 1e9
    ctx = doc.get("context", {})
    print(f"git {ctx.get('git_revision', '?')}, load {ctx.get('load_avg', '?')}")
    print()
    print("| payload bytes | split ns/packet | packed ns/packet | split Mpps | packed Mpps | packed/split |")
    print("|---|---|---|---|---|---|")
    for n, v in sorted(cells.items()):
        if "split" in v and "packed" in v:
            s, p = v["split"], v["packed"]
            print(f"| {n} | {s:.0f} | {p:.0f} | {1e3 / s:.2f} | {1e3 / p:.2f} | {p / s:.2f} |")


def summary(paths):
    """Several runs: each target's median over the runs and its range."""
    runs = [targets(p) for p in paths]
    print(f"| target | median of {len(runs)} runs | range |")
    print("|---|---|---|")
    for k in runs[0]:
        v = sorted(r[k] for r in runs if k in r)
        print(f"| {k} | {v[len(v) // 2]:.3f} | {v[0]:.3f}-{v[-1]:.3f} |")


if __name__ == "__main__":
    if sys.argv[1] == "--histograms":
        histograms(sys.argv[2])
    elif sys.argv[1] == "--datapath":
        datapath(sys.argv[2])
    elif len(sys.argv) > 2:
        summary(sys.argv[1:])
    else:
        main(sys.argv[1])
