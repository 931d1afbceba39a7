"""./run demo's destination line: the device start of a 64 GiB guest, as a
migration destination sees it. vdpa-testpmd serves the PMD on an emulated
cx7 with 16 pre-created queue pairs; tools/vhost-user-guest connects with
64 GiB of guest memory in two sparse memfds and starts in QEMU's
migration-destination order; the PMD's downtime ledger (telemetry) gives
dev_conf entry to every virtq RDY and, of it, the memory registration.
Sequential (DPDK 22.11's order) and async alternate, three runs each."""
import json
import os
import statistics
import time

from harness.frontend import VhostUserGuest
from harness.host import vdpa_testpmd
from harness.migration import vdev, wait_ledger
from harness.proc import Workdir

GUEST_GIB = 64
PAIRS = 16
RUNS = 3


def one_start(build, strategy, workdir, run):
    app = os.path.join(build, "app", "vdpa-testpmd", "vdpa-testpmd")
    guest = os.path.join(build, "tools", "vhost-user-guest", "vhost-user-guest")
    host = vdpa_testpmd(app, workdir, f"dst-{strategy}-{run}", vdev(PAIRS, strategy))
    fe = None
    try:
        fe = VhostUserGuest(guest, host.socket, PAIRS, ["--mem-mb", str(GUEST_GIB * 1024), "--regions", "2"],
                            log_path=os.path.join(workdir, f"guest-{strategy}-{run}.log"))
        reply = fe.cmd("start dst", ok=False, timeout=300)
        if not reply.get("ok", True):
            raise SystemExit(f"demo: vhost-user-guest start failed: {reply}")
        led = wait_ledger(host, "start_seq", {"start_seq": 0}, "all_ready_ns", time.monotonic() + 300)
        if led.get("start_rings") != 2 * PAIRS:
            raise SystemExit(f"demo: {led.get('start_rings')} of {2 * PAIRS} virtqs started ({strategy})")
        return led["start_ns"] / 1e6, led["memory_ns"] / 1e6
    finally:
        if fe:
            fe.kill()
        host.kill()


def run(build, out):
    """Prints the line and writes out/destination.json; returns the line."""
    starts = {"sequential": [], "async": []}
    with Workdir("mlx5a-demo-dst-") as wd:
        for r in range(RUNS):
            for s in starts:
                starts[s].append(one_start(build, s, wd.path, r))
    med = {s: (statistics.median(t for t, _ in v), statistics.median(m for _, m in v))
           for s, v in starts.items()}
    with open(os.path.join(out, "destination.json"), "w") as f:
        json.dump({"guest_gib": GUEST_GIB, "virtqs": 2 * PAIRS, "runs": RUNS,
                   "starts_ms": {s: [{"start": t, "memory": m} for t, m in v] for s, v in starts.items()}},
                  f, indent=1)
    (st, sm), (at, am) = med["sequential"], med["async"]
    return (f"destination start of a {GUEST_GIB} GiB guest ({2 * PAIRS} virtqs, dev_conf to every "
            f"virtq RDY, median of {RUNS}): sequential {st:.1f} ms (guest memory {sm:.1f}), "
            f"async {at:.1f} ms (guest memory {am:.1f}): {st / at:.1f}x")
