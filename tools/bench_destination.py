#!/usr/bin/env python3
"""out/bench/destination.json and its table from bench/bm_destination's
Google Benchmark JSON (repetitions): per guest size and device count, the
median start of each strategy, measured/ideal and async's speed-up over
sequential in the same run; then the issue's target row. Rows whose
virtqs are created by the start (not pre-created) come in a second table,
with the model's limit for the same work done memory first, virtqs after
(`unshared_ms`); rows of a guest on hugepages (2 MiB, 1 GiB: the model's
page counts) in a third, next to the same guest on 4 KiB pages; last, an
engine switch off (BM_DestinationSwitchOff) beside the same start with all
on, and whether it is worse beyond the all-on spread (max - min).

  bench_destination.py RAW.json OUT.json"""
import json
import re
import statistics
import sys

from bench_heuristics import off_against_on

# A start, or (group 1) the same start with that engine switch off.
NAME = re.compile(r"BM_Destination(?:Start|SwitchOff/(\w+))/strategy:(\w+)/guest_gib:(\d+)/devices:(\d+)/"
                  r"precreated:(\d)/page_kib:(\d+)/concurrent:(\d)/")
TARGET = (256, 4)  # guest GiB, devices: async <= 1.25x ideal, >= 3x sequential
# and, started side by side: concurrent <= 1.25x its ideal, >= 2.5x faster than serial


def main(raw_path, out_path):
    with open(raw_path) as f:
        doc = json.load(f)
    runs, off_runs = {}, {}
    for b in doc["benchmarks"]:
        if b.get("run_type") == "aggregate" or b.get("error_occurred"):
            continue
        m = NAME.match(b["name"])
        if not m:
            continue
        key = (m.group(2), int(m.group(3)), int(m.group(4)), m.group(5) == "1", int(m.group(6)),
               "concurrent" if m.group(7) == "1" else "serial")
        if m.group(1):  # beside the all-on row of the same key
            off_runs.setdefault((m.group(1), key), []).append(b["measured_ms"])
            continue
        runs.setdefault(key, {"ms": [], "ideal": b["ideal_ms"], "virtqs": int(b["virtqs_per_device"]),
                              "unshared": b.get("unshared_ms")})
        runs[key]["ms"].append(b["measured_ms"])
    rows = []
    for (s, g, d, pre, page, starts), r in sorted(
            runs.items(), key=lambda kv: (kv[0][5], kv[0][4], not kv[0][3], kv[0][1], kv[0][2], kv[0][0])):
        row = {"guest_gib": g, "devices": d, "virtqs_per_device": r["virtqs"], "strategy": s,
               "median_ms": round(statistics.median(r["ms"]), 3), "ideal_ms": round(r["ideal"], 3),
               "virtqs_precreated": pre, "page_kib": page, "starts": starts, "runs": len(r["ms"])}
        if r["unshared"] is not None:
            row["unshared_ms"] = round(r["unshared"], 3)
        rows.append(row)
    switches = []
    for (name, key), ms in sorted(off_runs.items()):
        on = runs.get(key)
        if not on:
            continue
        s, g, d, pre, page, starts = key
        cmp = off_against_on(on["ms"], ms)
        switches.append({"switch": name, "strategy": s, "guest_gib": g, "devices": d,
                         "virtqs_precreated": pre, "page_kib": page, "starts": starts,
                         "ideal_ms": round(on["ideal"], 3), "on_median_ms": round(cmp["on_median_ms"], 3),
                         "on_spread_ms": round(cmp["spread_ms"], 3),
                         "off_median_ms": round(cmp["off_median_ms"], 3), "runs": len(ms),
                         "beats_spread": cmp["beats_spread"]})
    ctx = doc.get("context", {})
    with open(out_path, "w") as f:
        json.dump({"profile": ctx.get("profile"), "git_revision": ctx.get("git_revision"),
                   "rows": rows, "switches_off": switches}, f, indent=1)
    by = {(r["strategy"], r["guest_gib"], r["devices"], r["virtqs_precreated"]): r
          for r in rows if r["page_kib"] == 4 and r["starts"] == "serial"}
    print(f"destination start (dev_conf entry to every virtq RDY), 32 virtqs per device, "
          f"profile {ctx.get('profile', '?')}, git {ctx.get('git_revision', '?')}")
    fmt = lambda r, k: f"{r[k]:.1f}" if r and k in r else "-"
    ratio = lambda r: f"{r['median_ms'] / r['ideal_ms']:.2f}" if r and r["ideal_ms"] else "-"
    for pre in (True, False):
        sizes = sorted({(r["guest_gib"], r["devices"]) for r in rows if r["virtqs_precreated"] == pre})
        if not sizes:
            continue
        print()
        print("virtqs pre-created:" if pre else
              "virtqs created by the start (unshared: the model's limit with the memory first, "
              "the virtqs after):")
        print()
        extra = "" if pre else " unshared ms |"
        print(f"| guest GiB | devices | ideal async ms |{extra} async ms | async/ideal | sequential ms "
              "| sequential/ideal | seq/async |")
        print("|---|---|---|---|---|---|---|---|" + ("" if pre else "---|"))
        for g, d in sizes:
            a, s = by.get(("async", g, d, pre)), by.get(("sequential", g, d, pre))
            speed = f"{s['median_ms'] / a['median_ms']:.1f}x" if a and s else "-"
            un = "" if pre else f" {fmt(a, 'unshared_ms')} |"
            print(f"| {g} | {d} | {fmt(a, 'ideal_ms')} |{un} {fmt(a, 'median_ms')} | {ratio(a)} "
                  f"| {fmt(s, 'median_ms')} | {ratio(s)} | {speed} |")
    pages = sorted({r["page_kib"] for r in rows} - {4})
    if pages:
        print()
        print("a guest on hugepages (the model's page counts), virtqs pre-created; 4 KiB: the same "
              "guest on a memfd:")
        print()
        print("| guest GiB | devices | page | ideal async ms | async ms | async/ideal | sequential ms "
              "| seq/async | async on 4 KiB pages ms |")
        print("|---|---|---|---|---|---|---|---|---|")
        by_page = {(r["strategy"], r["guest_gib"], r["devices"], r["page_kib"]): r
                   for r in rows if r["virtqs_precreated"] and r["starts"] == "serial"}
        for g, d, page in sorted({(r["guest_gib"], r["devices"], r["page_kib"]) for r in rows
                                  if r["page_kib"] != 4}):
            a, s = by_page.get(("async", g, d, page)), by_page.get(("sequential", g, d, page))
            small = by_page.get(("async", g, d, 4))
            speed = f"{s['median_ms'] / a['median_ms']:.1f}x" if a and s else "-"
            label = "2 MiB" if page == 2048 else "1 GiB" if page == 1 << 20 else f"{page} KiB"
            print(f"| {g} | {d} | {label} | {fmt(a, 'ideal_ms')} | {fmt(a, 'median_ms')} | {ratio(a)} "
                  f"| {fmt(s, 'median_ms')} | {speed} | {fmt(small, 'median_ms')} |")
    starts = {(r["guest_gib"], r["devices"], r["starts"]): r for r in rows
              if r["strategy"] == "async" and r["virtqs_precreated"] and r["page_kib"] == 4}
    nics = sorted({(g, d) for g, d, k in starts if k == "concurrent"})
    if nics:
        print()
        print("a VM's NICs (async, virtqs pre-created): serial starts, each dev_conf waiting for its "
              "start, against concurrent ones, side by side on the devices' strands (each device "
              "its own firmware, the host's pinning CPUs shared):")
        print()
        print("| guest GiB | devices | ideal serial ms | serial ms | ideal concurrent ms | concurrent ms "
              "| concurrent/ideal | serial/concurrent |")
        print("|---|---|---|---|---|---|---|---|")
        for g, d in nics:
            se, co = starts.get((g, d, "serial")), starts.get((g, d, "concurrent"))
            speed = f"{se['median_ms'] / co['median_ms']:.1f}x" if se and co else "-"
            print(f"| {g} | {d} | {fmt(se, 'ideal_ms')} | {fmt(se, 'median_ms')} | {fmt(co, 'ideal_ms')} "
                  f"| {fmt(co, 'median_ms')} | {ratio(co)} | {speed} |")
        se, co = starts.get(TARGET + ("serial",)), starts.get(TARGET + ("concurrent",))
        if se and co:
            over, speed = co["median_ms"] / co["ideal_ms"], se["median_ms"] / co["median_ms"]
            print()
            print(f"target {TARGET[0]} GiB x {TARGET[1]} devices started side by side: concurrent/ideal "
                  f"{over:.2f} (<= 1.25: {'met' if over <= 1.25 else 'NOT met'}), serial/concurrent "
                  f"{speed:.1f}x (>= 2.5: {'met' if speed >= 2.5 else 'NOT met'})")
    print_switches(switches)
    a, s = by.get(("async",) + TARGET + (True,)), by.get(("sequential",) + TARGET + (True,))
    if a and s:
        over, speed = a["median_ms"] / a["ideal_ms"], s["median_ms"] / a["median_ms"]
        print()
        print(f"target {TARGET[0]} GiB x {TARGET[1]} devices: async/ideal {over:.2f} (<= 1.25: "
              f"{'met' if over <= 1.25 else 'NOT met'}), sequential/async {speed:.1f}x (>= 3: "
              f"{'met' if speed >= 3 else 'NOT met'})")


def print_switches(switches):
    if not switches:
        return
    print()
    print("an engine switch off beside the same start with all on (doc/engine.md, \"Heuristics\"); "
          "spread: max - min of the all-on repetitions:")
    print()
    print("| switch off | guest GiB | virtqs | all-on ms | spread ms | off ms | all-on/ideal | off/ideal "
          "| off worse beyond spread |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in switches:
        print(f"| {r['switch']} | {r['guest_gib']} | {'pre-created' if r['virtqs_precreated'] else 'created'} "
              f"| {r['on_median_ms']:.1f} | {r['on_spread_ms']:.1f} | {r['off_median_ms']:.1f} "
              f"| {r['on_median_ms'] / r['ideal_ms']:.2f} | {r['off_median_ms'] / r['ideal_ms']:.2f} "
              f"| {'yes' if r['beats_spread'] else 'no'} |")


if __name__ == "__main__":
    main(*sys.argv[1:3])
