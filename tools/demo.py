#!/usr/bin/python3
"""./run demo: the main job on the emulated ConnectX (default profile cx7).

For each queue-pair count of the sweep it starts vdpa-testpmd with the PMD on
an emulated device, connects a real vhost-user frontend (Debian's dpdk-testpmd
over net_virtio_user up to 8 pairs; tools/vhost-user-guest beyond), and runs
suspend/resume cycles with each strategy (sequential, threads, async). It then
prints the reference table for 16 pairs (32 virtqs), plots suspend time
against virtq count, and keeps the JSON results and the Chrome trace. Last,
the destination start of a 64 GiB guest, sequential against async
(tools/demo_destination.py).

usage: tools/demo.py BUILD_DIR [--out DIR] [--cycles N] [--pairs 1,2,4,8,16]
"""
import argparse
import json
import os
import subprocess
import sys

import demo_destination  # tools/, this script's folder
import measured
from harness import TOP
from harness.frontend import Frontend, VhostUserGuest
from harness.host import eal
from harness.proc import Proc, Workdir, unique

STRATEGIES = "sequential,threads,async"
TRAFFIC = 128  # packets per queue pair sent by vhost-user-guest during the cycles


def frontend(build, sock, pairs, wd):
    guest = os.path.join(build, "tools", "vhost-user-guest", "vhost-user-guest")
    if pairs > 8:
        if not os.path.exists(guest):
            return None
        g = VhostUserGuest(guest, sock, pairs, log_path=wd.file("guest.log"))
        g.cmd("start", timeout=120)
        # Traffic: receive buffers on every RX ring (2k), packets on every TX
        # ring (2k+1), posted as the app starts its cycles; the emulated
        # device loops them back; counted from the RX used rings at the end.
        for q in range(pairs):
            g.cmd(f"post-rx {2 * q} {TRAFFIC}", timeout=30)
            g.cmd(f"post-tx {2 * q + 1} {TRAFFIC} 256", timeout=30)
        g.traffic_pairs = pairs
        return g
    # DPDK 22.11's virtio_user: at most 8 queue pairs. Not forwarding: no
    # busy-polling lcore competing with the control path for the 2 cores.
    return Frontend(sock, pairs, unique("demo-fe"), log_path=wd.file("frontend.log"))


def traffic_looped(fe):
    """(packets the device looped back (RX rings' used index), callfd
    signals the guest got, rings signalled), or None."""
    pairs = getattr(fe, "traffic_pairs", 0)
    if not pairs:
        return None
    total = sum(fe.cmd(f"used {2 * q}", timeout=30).get("used_idx", 0) for q in range(pairs))
    irqs = fe.cmd("irqs", timeout=30)
    return total, irqs.get("total", 0), sum(1 for c in irqs.get("irqs", []) if c)


def run_one(build, out, pairs, cycles, trace):
    result = os.path.join(out, f"results-q{2 * pairs}.json")
    with Workdir("mlx5a-demo-") as wd:
        iface = wd.file("sock")
        app = [os.path.join(build, "app", "vdpa-testpmd", "vdpa-testpmd")] + eal(256) + [
            "--file-prefix", unique("demo-app"),
            "--vdev", f"vdpa_mlx5async0,emu=cx7,queues={pairs},queue_size=256", "--",
            "--iface", iface, "--auto-start", "--wait-ready", "120", "--cycles", str(cycles),
            "--strategies", STRATEGIES, "--json", result]
        if trace:
            app += ["--trace", os.path.join(out, "trace.json")]
        host = Proc(app, "vdpa-testpmd", log_path=wd.file("app.log"))
        fe = None
        try:
            host.read_until(lambda l: ": attached to " in l, 60)  # the socket exists now
            fe = frontend(build, iface + "0", pairs, wd)
            if fe is None:
                return None
            host.read_until(lambda l: l.startswith("cycles:"), 600)
            looped = traffic_looped(fe)
            rc = host.wait(120)
            table = [l for l in host.output() if l.startswith("|") or l.startswith("(medians")]
            if rc != 0:
                raise SystemExit(f"demo: vdpa-testpmd failed ({rc}) at {pairs} pairs:\n" + host.tail(30))
            return result, table, looped
        finally:
            if fe:
                fe.kill()
            host.kill()


def model(result):
    """The emulator's cost model as vdpa-testpmd read it from the emulator
    (its results JSON: profile, modify_ms, query_ms, fw_max_inflight)."""
    with open(result) as f:
        r = json.load(f)
    profile = r["profile"].split(":", 1)[-1].split(",", 1)[0]
    return (f"{profile} profile: {r['modify_ms']:g} ms per MODIFY, {r['query_ms']:g} ms per QUERY, "
            f"{r['fw_max_inflight']} commands in flight")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--out", default=os.path.join(TOP, "out", "demo"))
    ap.add_argument("--cycles", type=int, default=50)
    ap.add_argument("--pairs", default="1,2,4,8,16")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    pairs = [int(x) for x in a.pairs.split(",")]
    results, main_table, main_q, looped = [], None, 0, None
    for p in pairs:
        print(f"demo: {2 * p} virtqs ({p} queue pairs), {a.cycles} cycles x {STRATEGIES} ...",
              flush=True)
        r = run_one(a.build, a.out, p, a.cycles, trace=(p == max(pairs)))
        if r is None:
            print(f"demo: skipped {2 * p} virtqs: no frontend for {p} pairs "
                  "(tools/vhost-user-guest not built)")
            continue
        results.append(r[0])
        main_table, main_q, looped = r[1], 2 * p, r[2]
    if not results:
        raise SystemExit("demo: nothing ran")
    plot = os.path.join(a.out, "suspend-vs-virtqs.svg")
    subprocess.run([sys.executable, os.path.join(TOP, "tools", "plot.py"), "-o", plot,
                    "--op", "both"] + results, check=True)
    summary = [f"emulated ConnectX-7 ({model(results[-1])}), 1 device x {main_q} virtqs, "
               f"median of {a.cycles} cycles:", ""]
    summary += main_table
    if looped is not None:
        packets, irqs, rings = looped
        summary += ["", f"traffic: {packets} of {TRAFFIC * main_q // 2} packets the guest posted on its "
                    f"{main_q // 2} TX rings came back on its RX rings (emulated loopback datapath); "
                    f"{irqs} interrupts reached the guest's callfds on {rings} of {main_q} rings"]
    summary += ["", demo_destination.run(a.build, a.out)]
    print()
    print("\n".join(summary), flush=True)
    measured.write_summary(os.path.join(a.out, "summary.json"), "./run demo", "\n".join(summary))
    print()
    print(f"results: {os.path.join(a.out, 'results-q*.json')}, {os.path.join(a.out, 'destination.json')}")
    print(f"plot:    {plot}")
    print(f"trace:   {os.path.join(a.out, 'trace.json')} (open in https://ui.perfetto.dev)")


if __name__ == "__main__":
    main()
