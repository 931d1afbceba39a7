#!/usr/bin/python3
"""./run soak MINUTES: the driver kept in its two loops for MINUTES on the
emulated ConnectX (cx7 profile), its processes sampled, and what they hold
asserted flat after a warm-up.

Each turn runs both parts, one after the other:
- cycles: vdpa-testpmd (at its prompt) serves one device of 4 queue pairs
  to tools/vhost-user-guest; the guest posts PACKETS frames on every TX
  ring and as many buffers on every RX ring, the app runs `cycle all
  CYCLES`; every cycle must succeed and every frame come back on its pair's
  RX ring (nothing lost across the suspends).
- migrations: a QEMU guest with 2 queue pairs live-migrates between two
  vdpa-testpmd hosts, one way each turn; the migration must complete and
  the guest's traffic grow on the destination, whose old QEMU then quits.

After each turn every host process is sampled: open fds, threads, resident
memory and the objects its emulated device holds (the firmware's view:
/vdpa_testpmd/emu_objects). A migration host is compared only with itself
in the same state (serving the guest or idle). After the warm-up (the first
WARMUP of each series' samples, at least 2) fds, threads and device objects
must not change at all, and resident memory must not grow by more than
RSS_SLACK_KB from the first sample after the warm-up to the last.

Writes DIR (default out/soak): soak.json (every sample and the verdicts),
soak.svg (the four quantities against time, a line per host and state) and
summary.json (the verdict table, ./run report's `soak` block). Exits 1 when
a part failed or something grew.

usage: tools/soak.py BUILD_DIR MINUTES [--out DIR]
"""
import argparse
import json
import os
import sys
import time

import measured
from harness import TOP
from harness.frontend import VhostUserGuest
from harness.host import EAL_COMMON, vdpa_testpmd
from harness.migration import Testbed, vdev
from harness.proc import resources
from harness.wait import until

PAIRS = 4            # the cycles part's device
GUEST_PAIRS = 2      # the migrating guest's NIC
CYCLES = 20          # suspend/resume cycles per turn
PACKETS = 64         # frames per TX ring per turn
WARMUP = 0.2         # of each series' samples
RSS_SLACK_KB = 8192  # allocator and page-cache noise, not a leak
EXACT = ("fds", "threads", "objects")
TELEMETRY_THREAD = "telemetry-v2"  # DPDK 22.11's listener's name


def cycles_turn(host, guest):
    """One turn of the cycles part: traffic posted, CYCLES cycles, every
    frame looped back. Returns the frames looped."""
    for q in range(PAIRS):
        guest.cmd(f"post-rx {2 * q} {PACKETS}", timeout=30)
        guest.cmd(f"post-tx {2 * q + 1} {PACKETS} 256", timeout=30)
    mark = host.mark()
    host.send(f"cycle all {CYCLES}")
    line = host.wait_line(lambda l: "failed cycles:" in l, 600, "the cycles' summary", since=mark)
    assert f"cycles: {CYCLES}  failed cycles: 0" in line, f"cycles failed: {line}\n{host.tail(20)}"
    looped = 0
    for q in range(PAIRS):
        seen = {"rx": 0, "tx": 0}

        def reap():  # the used entries since the last look, freed for the next turn
            seen["rx"] += guest.cmd(f"used {2 * q}", timeout=30)["consumed"]
            seen["tx"] += guest.cmd(f"used {2 * q + 1}", timeout=30)["consumed"]
            return dict(seen)
        got = until(reap, lambda c: c["rx"] >= PACKETS and c["tx"] >= PACKETS, 60,
                    f"pair {q}'s {PACKETS} frames back", describe=lambda c: f"{c}\n{host.tail(20)}")
        assert got == {"rx": PACKETS, "tx": PACKETS}, f"pair {q}: {got} of {PACKETS} frames"
        looped += got["rx"]
    return looped


def migration_turn(bed, vm, src, dst):
    """One migration src -> dst; returns the guest's new QEMU."""
    m = bed.migrate(vm, src, dst)
    before = len(m.dst_vm.stats())
    s = m.dst_vm.wait_stats(before, 2, 120)
    assert sum(s[-1][1].values()) > sum(s[before][1].values()), \
        f"no traffic on {dst.name} after the migration\n{dst.report()}"
    vm.terminate()  # the source QEMU quits, as after a real migration
    return m.dst_vm, m.downtime_ms()


def settled(host, idle=False):
    """resources() once the host's telemetry serves no client: DPDK runs a
    thread (named as its listener, which it inherits) with the client's
    socket per telemetry connection, ending after the client closed; the
    harness's own last query must not count. An `idle` host first has to
    be done with the guest that left: vhost's device gone (vid -1)."""
    if idle:
        until(lambda: host.info()["vid"], lambda vid: vid == -1, 60, f"{host.name}: the departed guest's device gone")
    return until(lambda: resources(host.pid), lambda r: r["thread_names"].get(TELEMETRY_THREAD, 0) <= 1,
                 30, f"{host.name}: telemetry client threads gone")


def sample(host, key, t, samples, idle=False):
    r = settled(host, idle)
    objs = host.emu_objects()
    r["objects"] = sum(objs.values())
    r["object_kinds"] = objs
    samples.setdefault(key, []).append({"t": t, **r})


def verdicts(samples):
    """Per series (host and state): what changed after the warm-up."""
    out = {}
    for key, ss in samples.items():
        skip = max(2, int(len(ss) * WARMUP))
        after = ss[skip:]
        v = {"samples": len(ss), "warmup": min(skip, len(ss)), "problems": []}
        if len(after) < 2:
            v["problems"].append(f"{len(after)} samples after the warm-up: run longer")
        else:
            for q in EXACT:
                vals = sorted({s[q] for s in after})
                v[q] = [after[0][q], after[-1][q]]
                if len(vals) > 1:
                    v["problems"].append(f"{q} changed after the warm-up: {vals}")
            growth = after[-1]["rss_kb"] - after[0]["rss_kb"]
            v["rss_kb"] = [after[0]["rss_kb"], after[-1]["rss_kb"]]
            if growth > RSS_SLACK_KB:
                v["problems"].append(f"resident memory grew {growth} KiB after the warm-up "
                                     f"(> {RSS_SLACK_KB})")
        out[key] = v
    return out


def plot(samples, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "mlx5async"})
    fig, axes = plt.subplots(4, 1, figsize=(8, 10), sharex=True)
    for ax, (q, label) in zip(axes, (("fds", "open fds"), ("threads", "threads"),
                                     ("rss_kb", "resident memory (MiB)"),
                                     ("objects", "device objects"))):
        for key, ss in sorted(samples.items()):
            ys = [s[q] / 1024 if q == "rss_kb" else s[q] for s in ss]
            ax.plot([s["t"] / 60 for s in ss], ys, marker=".", label=key)
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize="small")
    axes[-1].set_xlabel("minutes")
    fig.suptitle("./run soak: what each host process holds, sampled after each turn")
    fig.tight_layout()
    fig.savefig(path)


def summary_table(minutes, turns, cycles, looped, migrations, downtimes, vs):
    rows = [f"{minutes:g} minutes: {turns} turns, {cycles} suspend/resume cycles "
            f"({looped} frames looped, none lost), {migrations} live migrations "
            f"(QEMU downtime median {sorted(downtimes)[len(downtimes) // 2]:.0f} ms)" if downtimes else "",
            "", "| host process (state) | samples | fds | threads | RSS (MiB) | device objects | verdict |",
            "|---|---|---|---|---|---|---|"]
    for key, v in sorted(vs.items()):
        def span(q, scale=1):
            if q not in v:
                return "-"
            a, b = (x / scale for x in v[q])
            return f"{a:g}" if a == b else f"{a:g} -> {b:g}"
        rows.append(f"| {key} | {v['samples']} ({v['warmup']} warm-up) | {span('fds')} | {span('threads')} | "
                    f"{span('rss_kb', 1024.0)} | {span('objects')} | "
                    f"{'flat' if not v['problems'] else '; '.join(v['problems'])} |")
    rows.append("(after the warm-up: first to last sample)")
    return "\n".join(rows)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("minutes", type=float)
    ap.add_argument("--out", default=os.path.join(TOP, "out", "soak"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    app = os.path.join(a.build, "app", "vdpa-testpmd", "vdpa-testpmd")
    guest_bin = os.path.join(a.build, "tools", "vhost-user-guest", "vhost-user-guest")
    guest_dir = os.path.join(TOP, ".cache", "guest")
    samples, downtimes = {}, []
    turns = looped = migrations = 0
    with Testbed(app, guest_dir, GUEST_PAIRS) as bed:
        cyc = vdpa_testpmd(app, bed.workdir, "cycles", f"vdpa_mlx5async0,emu=cx7,queues={PAIRS},queue_size=256",
                           eal_args=EAL_COMMON, interactive=True)
        bed.hosts.append(cyc)  # ended with the bed
        guest = VhostUserGuest(guest_bin, cyc.sockets[0], PAIRS, log_path=os.path.join(bed.workdir, "vug.log"))
        guest.cmd("start", timeout=120)
        hosts = [bed.host("h0", vdev(GUEST_PAIRS, "async")), bed.host("h1", vdev(GUEST_PAIRS, "async"))]
        vm = bed.boot(hosts[0])
        start = time.monotonic()
        end = start + a.minutes * 60
        try:
            while time.monotonic() < end:
                looped += cycles_turn(cyc, guest)
                src, dst = hosts[turns % 2], hosts[(turns + 1) % 2]
                vm, downtime = migration_turn(bed, vm, src, dst)
                downtimes.append(downtime)
                migrations += 1
                turns += 1
                t = time.monotonic() - start
                sample(cyc, "cycles", t, samples)
                sample(dst, f"{dst.name} (serving)", t, samples)
                sample(src, f"{src.name} (idle)", t, samples, idle=True)
                print(f"soak: {t / 60:.1f} min, turn {turns}: {CYCLES} cycles, {src.name} -> {dst.name} "
                      f"(downtime {downtime:.0f} ms)", flush=True)
        finally:
            guest.kill()
    vs = verdicts(samples)
    bad = [f"{k}: {p}" for k, v in vs.items() for p in v["problems"]]
    with open(os.path.join(a.out, "soak.json"), "w") as f:
        json.dump({"minutes": a.minutes, "turns": turns, "samples": samples, "verdicts": vs}, f, indent=1)
    plot(samples, os.path.join(a.out, "soak.svg"))
    table = summary_table(a.minutes, turns, turns * CYCLES, looped, migrations, downtimes, vs)
    print(table)
    print(f"JSON: {os.path.join(a.out, 'soak.json')}; plot: {os.path.join(a.out, 'soak.svg')}")
    if bad:
        print("soak: grew after the warm-up:\n  " + "\n  ".join(bad))
        return 1
    measured.write_summary(os.path.join(a.out, "summary.json"), f"./run soak {a.minutes:g}", table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
