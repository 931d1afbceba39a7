#!/usr/bin/env python3
"""out/bench/destination.json and its table from bench/bm_destination's
Google Benchmark JSON (repetitions): per guest size and device count, the
median start of each strategy, measured/ideal and async's speed-up over
sequential in the same run; then the issue's target row.

  bench_destination.py RAW.json OUT.json"""
import json
import re
import statistics
import sys

NAME = re.compile(r"BM_DestinationStart/strategy:(\w+)/guest_gib:(\d+)/devices:(\d+)/")
TARGET = (256, 4)  # guest GiB, devices: async <= 1.25x ideal, >= 3x sequential


def main(raw_path, out_path):
    with open(raw_path) as f:
        doc = json.load(f)
    runs = {}
    for b in doc["benchmarks"]:
        m = NAME.match(b["name"])
        if not m or b.get("run_type") == "aggregate" or b.get("error_occurred"):
            continue
        key = (m.group(1), int(m.group(2)), int(m.group(3)))
        runs.setdefault(key, {"ms": [], "ideal": b["ideal_ms"], "virtqs": int(b["virtqs_per_device"])})
        runs[key]["ms"].append(b["measured_ms"])
    rows = [{"guest_gib": g, "devices": d, "virtqs_per_device": r["virtqs"], "strategy": s,
             "median_ms": round(statistics.median(r["ms"]), 3), "ideal_ms": round(r["ideal"], 3),
             "runs": len(r["ms"])}
            for (s, g, d), r in sorted(runs.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][0]))]
    ctx = doc.get("context", {})
    with open(out_path, "w") as f:
        json.dump({"profile": ctx.get("profile"), "git_revision": ctx.get("git_revision"),
                   "rows": rows}, f, indent=1)
    by = {(r["strategy"], r["guest_gib"], r["devices"]): r for r in rows}
    print(f"destination start (dev_conf entry to every virtq RDY), 32 virtqs per device, "
          f"profile {ctx.get('profile', '?')}, git {ctx.get('git_revision', '?')}")
    print()
    print("| guest GiB | devices | ideal async ms | async ms | async/ideal | sequential ms "
          "| sequential/ideal | seq/async |")
    print("|---|---|---|---|---|---|---|---|")
    for g, d in sorted({(r["guest_gib"], r["devices"]) for r in rows}):
        a, s = by.get(("async", g, d)), by.get(("sequential", g, d))
        fmt = lambda r, k: f"{r[k]:.1f}" if r else "-"
        ratio = lambda r: f"{r['median_ms'] / r['ideal_ms']:.2f}" if r and r["ideal_ms"] else "-"
        speed = f"{s['median_ms'] / a['median_ms']:.1f}x" if a and s else "-"
        print(f"| {g} | {d} | {fmt(a, 'ideal_ms')} | {fmt(a, 'median_ms')} | {ratio(a)} "
              f"| {fmt(s, 'median_ms')} | {ratio(s)} | {speed} |")
    a, s = by.get(("async",) + TARGET), by.get(("sequential",) + TARGET)
    if a and s:
        over, speed = a["median_ms"] / a["ideal_ms"], s["median_ms"] / a["median_ms"]
        print()
        print(f"target {TARGET[0]} GiB x {TARGET[1]} devices: async/ideal {over:.2f} (<= 1.25: "
              f"{'met' if over <= 1.25 else 'NOT met'}), sequential/async {speed:.1f}x (>= 3: "
              f"{'met' if speed >= 3 else 'NOT met'})")


if __name__ == "__main__":
    main(*sys.argv[1:3])
