#!/usr/bin/python3
"""./run migrate: one Linux guest with 16 queue pairs live-migrates between
two vdpa-testpmd hosts (mlx5async on an emulated ConnectX-7), once per
configuration and run, configurations alternating so that they share the
machine's conditions: each strategy with QEMU's announce parameters as they
are, then the async strategy with each `--announce-initial` value (QEMU's
migrate-set-parameters announce-initial, ms). QEMU's return-path capability
is on. Prints, per configuration, the medians (and ranges) of QEMU's
downtime and total time, the network downtime to the last destination
virtq RDY and to the guest's announce, the source's device stop, the
destination's device start and the rest; writes out/migrate/migrate.json
and out/migrate/timeline.svg (one lane per host: QEMU's events and the
PMD's downtime ledger on one time axis).

With --devices N the guest has N NICs, each a device of its own on both
hosts: the table's network downtime is the VM's (the first source device's
stop request to the last destination device's all_ready), and a second
table gives each device's stop and start.

usage: migrate.py BUILD_DIR GUEST_DIR [--runs 3] [--strategies sequential,async]
                  [--announce-initial 1] [--devices 1] [--queue-pairs 16/devices]
                  [--out DIR]
"""
import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # tools/: the harness, measured
import measured  # noqa: E402
import timeline  # noqa: E402
from harness import TOP, wire  # noqa: E402
from harness.migration import Testbed, vdevs  # noqa: E402


def qmp_time(events, name, status=None):
    for e in events:
        if e["event"] == name and (status is None or e["data"].get("status") == status):
            return e["time"]
    return None


def record(m, config, run, commands):
    """One migration's numbers (ms) and its events on the wall clock (s).
    Network downtime: from the first source device's stop request (its
    first GET_VRING_BASE) to the last destination virtq RDY, and to the
    guest's last NIC's first gratuitous ARP through the destination device
    (the announce: when the network learns where the VM is), both hosts'
    ledgers on this machine's one wall clock. Device stop and start: the
    longest of the VM's devices; each device's in `devices`."""
    devices = [{"device": k, "source_stop_ms": s["stop_ns"] / 1e6, "destination_start_ms": d["start_ns"] / 1e6,
                "destination_memory_ms": d.get("memory_ns", 0) / 1e6,
                "start_after_stop_ms": (d["start_requested_wall_ns"] -
                                        min(x["stop_requested_wall_ns"] for x in m.src_ledgers)) / 1e6}
               for k, (s, d) in enumerate(zip(m.src_ledgers, m.dst_ledgers))]
    stop = max(x["source_stop_ms"] for x in devices)
    start = max(x["destination_start_ms"] for x in devices)
    down = m.downtime_ms()
    ev = {
        "source_stop": qmp_time(m.src_events, "STOP"),
        "source_completed": qmp_time(m.src_events, "MIGRATION", "completed"),
        "destination_completed": qmp_time(m.dst_events, "MIGRATION", "completed"),
        "destination_resume": qmp_time(m.dst_events, "RESUME"),
    }
    # QEMU's downtime ends when the source completes; it began that long before.
    ev["downtime_start"] = ev["source_completed"] - down / 1e3
    led_src = {k[:-8]: v / 1e9 for k, v in m.src_ledger.items() if k.endswith("_wall_ns") and v}
    led_dst = {k[:-8]: v / 1e9 for k, v in m.dst_ledger.items() if k.endswith("_wall_ns") and v}
    network = m.vm_network_ms()
    first_stop = min(x["stop_requested_wall_ns"] for x in m.src_ledgers)
    announce = (max(x["announced_wall_ns"] for x in m.dst_ledgers) - first_stop) / 1e6
    # The device's own: each NIC's first RARP on its destination port's
    # wire (the emulator's pcap) since the first stop; the VM's, its last NIC's.
    rarps = [min((t for t, _ in wire.rarps(m.dst_host.wire_pcaps[k]) if t >= first_stop), default=None)
             for k in range(len(m.dst_ledgers))]
    if None in rarps:
        raise AssertionError(f"a destination device sent no RARP since the stop: {rarps}")
    wire_announce = (max(rarps) - first_stop) / 1e6
    return {
        "strategy": config["label"], "run": run, "announce_initial_ms": config["announce_initial"],
        "downtime_ms": down, "network_downtime_ms": network, "total_ms": m.total_ms(),
        "announce_ms": announce, "wire_announce_ms": wire_announce,
        "wire_announce_ratio": wire_announce / network, "devices": devices,
        "resume_ms": ev["destination_resume"] * 1e3 - first_stop / 1e6,
        "resume_to_announce_ms": led_dst["announced"] * 1e3 - ev["destination_resume"] * 1e3,
        "setup_ms": float(m.info.get("setup-time", 0)),
        "source_stop_ms": stop, "destination_start_ms": start, "rest_ms": network - stop - start,
        "source_suspend_ms": m.src_ledger.get("suspend_ns", 0) / 1e6,
        "destination_conf_ms": m.dst_ledger.get("conf_ns", 0) / 1e6,
        "destination_memory_ms": max(x["destination_memory_ms"] for x in devices),
        "rings": m.src_ledger.get("stop_rings", 0),
        "qemu_events": ev, "source_ledger": led_src, "destination_ledger": led_dst,
        "destination_first_rarp": max(rarps) / 1e9,
        "commands": commands,
    }


def one(args, config, run):
    """One migration of `config`; its folder is kept (and named) when it fails."""
    with Testbed(args.app, args.guest_dir, args.queue_pairs, announce_initial=config["announce_initial"],
                 nics=args.devices) as bed:
        src = bed.host("src", vdevs(args.devices, args.queue_pairs, config["strategy"]))
        dst = bed.host("dst", vdevs(args.devices, args.queue_pairs, config["strategy"]))
        vm = bed.boot(src)
        vm.wait_stats(len(vm.stats()), 2, 120)  # traffic flowing before the migration
        m = bed.migrate(vm, src, dst, return_path=True)
        m.dst_vm.wait_stats(len(m.dst_vm.stats()), 1, 120)  # and after it
        # The first NIC's commands by type since each host's probe: the
        # source's boot start and stop, the destination's start.
        return record(m, config, run, {"source": src.latency(0), "destination": dst.latency(0)})


def configurations(args):
    """Each strategy with QEMU's announce parameters; then async with each
    announce-initial value."""
    out = [{"label": s, "strategy": s, "announce_initial": None} for s in args.strategies.split(",")]
    for ms in filter(None, args.announce_initial.split(",")):
        out.append({"label": f"async, announce-initial {int(ms)} ms", "strategy": "async",
                    "announce_initial": int(ms)})
    return out


COLUMNS = [("downtime_ms", "QEMU downtime"), ("total_ms", "total time"),
           ("network_downtime_ms", "network downtime"),
           ("announce_ms", "source stop to the guest's announce"),
           ("wire_announce_ms", "source stop to first announce on the wire"),
           ("wire_announce_ratio", "of it, x network downtime"),
           ("source_stop_ms", "source device stop"),
           ("destination_start_ms", "destination device start"),
           ("destination_memory_ms", "of it, guest memory"), ("rest_ms", "the rest")]
# shown to the microsecond
DEVICE_COLUMNS = ("source_stop_ms", "destination_start_ms", "destination_memory_ms")
RATIO_COLUMNS = ("wire_announce_ratio",)  # shown to the hundredth
# The announce timeline's moments, from the source's stop request.
TIMELINE = ("network_downtime_ms", "wire_announce_ms", "resume_ms", "announce_ms")


def summarize(rows, strategies):
    out = []
    for s in strategies:
        rs = [r for r in rows if r["strategy"] == s]
        entry = {"strategy": s, "runs": len(rs)}
        for key in [k for k, _ in COLUMNS] + ["resume_ms"]:
            v = [r[key] for r in rs]
            entry[key] = {"median": statistics.median(v), "min": min(v), "max": max(v)}
        out.append(entry)
    return out


DEVICE_TABLE = [("source_stop_ms", "source device stop"), ("destination_start_ms", "destination device start"),
                ("destination_memory_ms", "of it, guest memory"),
                ("start_after_stop_ms", "start requested, after the first source stop")]


def device_rows(rows, strategies, devices):
    """Per configuration and device, the medians of its own stop and start."""
    out = []
    for s in strategies:
        rs = [r for r in rows if r["strategy"] == s]
        for k in range(devices):
            e = {"strategy": s, "device": k}
            for key, _ in DEVICE_TABLE:
                v = [r["devices"][k][key] for r in rs]
                e[key] = {"median": statistics.median(v), "min": min(v), "max": max(v)}
            out.append(e)
    return out


def digits(key):
    return 3 if key in DEVICE_COLUMNS else 2 if key in RATIO_COLUMNS else 1


def commands_table(summary, rows):
    """Each configuration's firmware commands on both hosts, from its last
    run (the PMD's latency histograms: /vdpa_mlx5async/latency)."""
    out = ["Firmware commands of the first NIC by type, each configuration's last run, from the "
           "PMD's latency histograms (p50/p99: upper bounds of their log2 buckets; source: since "
           "its probe, the guest's boot start and the stop; destination: the start), us:", "",
           "| configuration | host | command | count | p50 | p99 | max |", "|---|---|---|---|---|---|---|"]
    for e in summary:
        last = [r for r in rows if r["strategy"] == e["strategy"]][-1]
        for side in ("source", "destination"):
            for ty, c in sorted(last["commands"][side].items()):
                out.append(f"| {e['strategy']} | {side} | {ty} | {c['count']} | {c['p50_ns'] / 1e3:.0f} | "
                           f"{c['p99_ns'] / 1e3:.0f} | {c['max_ns'] / 1e3:.0f} |")
    out.append("")
    return out


def table(summary, queue_pairs, devices=1, per_device=(), rows=()):
    """The Markdown of the summary: the table, then what its columns are;
    with several devices, each device's table after."""
    nics = f"{devices} NICs (a device each) of {queue_pairs} queue pairs" if devices > 1 else \
        f"{queue_pairs} queue pairs ({2 * queue_pairs} virtqs)"
    out = [f"live migration, 1 guest with {nics}, emulated cx7, QEMU 7.2 TCG, return-path on; ms, "
           f"median (min-max) of {summary[0]['runs']} runs", ""]
    out.append("| configuration | " + " | ".join(t for _, t in COLUMNS) + " |")
    out.append("|---|" + "---|" * len(COLUMNS))
    for e in summary:
        cells = [f"{e[k]['median']:.{digits(k)}f} ({e[k]['min']:.{digits(k)}f}-{e[k]['max']:.{digits(k)}f})"
                 for k, _ in COLUMNS]
        out.append(f"| {e['strategy']} | " + " | ".join(cells) + " |")
    out.append("")
    out.append("QEMU downtime: query-migrate's figure (the source VM stopped until the source "
               "completed). Network downtime: the source device's stop request (first "
               "GET_VRING_BASE) to every destination virtq RDY: the destination's device start "
               "comes after QEMU's figure ends. Source stop to the guest's announce: the same start to the "
               "guest's first gratuitous ARP through the destination device (QEMU asks the guest "
               "at its RESUME, then again after announce-initial and its steps). Source stop to "
               "first announce on the wire: the same start to the destination device's own first "
               "RARP on its port (the emulator's wire pcap), sent once every virtq is RDY; x "
               "network downtime: that over the network downtime, per run. Source device "
               "stop: first GET_VRING_BASE to used rings logged; destination device start: "
               "dev_conf to every virtq RDY, of it guest memory: dev_conf to the memory table "
               "registered; the rest: network downtime minus both (QEMU's state transfer and "
               "vhost-user messages).")
    out += ["", "Announce timeline: ms from the source device's stop request, median of each column:", "",
            "| configuration | every virtq RDY | device's first RARP on the wire | destination RESUME | "
            "guest's first gratuitous ARP |", "|---|---|---|---|---|"]
    for e in summary:
        out.append(f"| {e['strategy']} | " + " | ".join(f"{e[k]['median']:.1f}" for k in TIMELINE) + " |")
    out.append("")
    if rows:
        out += commands_table(summary, rows)
    if devices > 1:
        out.append("With several NICs: network downtime and announces are the VM's (the first source "
                   "device's stop to the last destination device's all_ready, and to the last NIC's "
                   "announce); device stop and start the longest device's. Each device:")
        out.append("")
        out.append("| configuration | device | " + " | ".join(t for _, t in DEVICE_TABLE) + " |")
        out.append("|---|---|" + "---|" * len(DEVICE_TABLE))
        for e in per_device:
            cells = [f"{e[k]['median']:.3f} ({e[k]['min']:.3f}-{e[k]['max']:.3f})" for k, _ in DEVICE_TABLE]
            out.append(f"| {e['strategy']} | {e['device']} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build_dir")
    ap.add_argument("guest_dir")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--strategies", default="sequential,async")
    ap.add_argument("--announce-initial", default="1",
                    help="QEMU announce-initial values (ms, comma-separated) for extra async rows; "
                         "empty: none")
    ap.add_argument("--devices", type=int, default=1, help="NICs of the guest, a device each")
    ap.add_argument("--queue-pairs", type=int, default=0, help="per NIC (default: 16 / devices)")
    ap.add_argument("--out", default=os.path.join(TOP, "out", "migrate"))
    args = ap.parse_args()
    args.queue_pairs = args.queue_pairs or max(1, 16 // args.devices)
    args.app = os.path.join(args.build_dir, "app", "vdpa-testpmd", "vdpa-testpmd")
    configs = configurations(args)
    strategies = [c["label"] for c in configs]
    os.makedirs(args.out, exist_ok=True)
    rows = []
    for run in range(1, args.runs + 1):
        for c in configs:
            try:
                r = one(args, c, run)
            except BaseException:
                print(f"run {run} {c['label']}: failed", file=sys.stderr)
                raise
            rows.append(r)
            print(f"run {run} {c['label']}: downtime {r['downtime_ms']:.0f} ms, total "
                  f"{r['total_ms']:.0f} ms, source stop {r['source_stop_ms']:.3f} ms, destination "
                  f"start {r['destination_start_ms']:.3f} ms, announce {r['announce_ms']:.1f} ms, "
                  f"first RARP on the wire {r['wire_announce_ms']:.1f} ms",
                  flush=True)
    summary = summarize(rows, strategies)
    per_device = device_rows(rows, strategies, args.devices)
    md = table(summary, args.queue_pairs, args.devices, per_device, rows)
    print("\n" + md)
    name = "summary.json" if args.devices == 1 else f"summary-devices{args.devices}.json"
    measured.write_summary(os.path.join(args.out, name), "./run migrate" +
                           (f" --devices {args.devices}" if args.devices > 1 else ""), md)
    doc = {"tool": "migrate", "commit": measured.commit(), "queue_pairs": args.queue_pairs,
           "devices": args.devices, "device_summary": per_device,
           "profile": "emu:cx7",
           "hypervisor": "qemu-system-x86_64 (TCG)", "return_path": True,
           "summary": summary, "runs": rows}
    path = os.path.join(args.out, "migrate.json" if args.devices == 1 else f"migrate-devices{args.devices}.json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    svg = os.path.join(args.out, "timeline.svg" if args.devices == 1 else f"timeline-devices{args.devices}.svg")
    timeline.write(svg, rows, strategies)
    print(f"JSON: {path}\ntimeline: {svg}")


if __name__ == "__main__":
    main()
