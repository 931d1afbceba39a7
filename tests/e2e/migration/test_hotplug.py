#!/usr/bin/env python3
"""Memory hot-plug under running rings, under the real hypervisor: a guest
with DIMM slots gets a pc-dimm (memfd, share=on) hot-plugged while its
traffic runs. vhost-user sends a new memory table, which DPDK 22.11 takes
by closing the vDPA device and configuring it again: every ring's indexes
survive the close (handed back, then programmed again), traffic goes on,
the new memory is registered. The guest then migrates to a destination
whose QEMU has the DIMM on its command line, with guest RAM compared page
for page, and runs there.

  test_hotplug.py plug --app vdpa-testpmd --guest-dir .cache/guest
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from test_migration import (bed_of, check_announce, check_bases, check_clean,  # noqa: E402
                            check_destination_traffic, check_ledgers, check_ram, check_traffic,
                            require_qemu_and_guest, slow_paused_migration)
from harness import qemu  # noqa: E402
from harness.cases import run_case  # noqa: E402
from harness.migration import vdev  # noqa: E402
from harness.wait import until  # noqa: E402

QP = 2
DIMM_GPA = 1 << 32  # where QEMU's pc machine puts the first DIMM (above 4 GiB)
DIMM_ARGS = ["-object", f"memory-backend-memfd,id=dimm0,size={qemu.DIMM_MB}M,share=on",
             "-device", "pc-dimm,id=d0,memdev=dimm0"]
# The guest's console when its virtio-net driver finds a ring it cannot trust.
RING_BROKEN = ("is not a head", "used len", "broken", "virtio_net virtio0: output.")


def restarted(host, before, regions, what):
    """The host device's ledger once vhost closed it and configured it again
    (a new stop and start) with `regions` memory regions registered."""
    return until(host.ledger, lambda l: l["start_seq"] > before["start_seq"] and l["all_ready_ns"]
                 and l["stop_seq"] > before["stop_seq"], 120, what, alive=host.alive)


def check_rings_trusted(vm):
    bad = [l for l in vm.console() if any(x in l for x in RING_BROKEN)]
    assert not bad, f"{vm.name}: the guest distrusts a ring:\n" + "\n".join(bad)


def case_plug(a):
    """Plug under traffic, a migration with the DIMM on both sides (RAM,
    DIMM included, compared page for page), then unplug on the destination."""
    with bed_of(a, QP) as bed:
        bed.vm_options = {"dimm_slots": 1}
        src = bed.host("src", vdev(QP, "async"))
        dst = bed.host("dst", vdev(QP, "async"))
        vm = bed.boot(src)
        check_traffic(vm, 2)
        before = src.ledger()
        vm.qmp.cmd("object-add", **{"qom-type": "memory-backend-memfd", "id": "dimm0",
                                    "size": qemu.DIMM_MB << 20, "share": True})
        vm.qmp.cmd("device_add", driver="pc-dimm", id="d0", memdev="dimm0")
        # vhost closes the device (every ring's indexes handed back) and
        # configures it again on the new table, the DIMM registered.
        plugged = restarted(src, before, 2, "the device restarted on the table with the DIMM")
        assert plugged["regions_registered"] == 2, plugged
        assert plugged["stop_rings"] == plugged["start_rings"] == 2 * QP, plugged
        check_traffic(vm, 3)
        check_rings_trusted(vm)
        # Migrate with the DIMM on the destination's command line; the
        # destination paused first, so that both RAMs compare.
        bed.vm_options = {"dimm_slots": 1, "extra_args": DIMM_ARGS}
        m = slow_paused_migration(bed, vm, src, dst)
        check_ram(bed, m, ((0, qemu.MEM_BYTES), (DIMM_GPA, qemu.DIMM_MB << 20)))
        bed.resume(m)
        assert m.dst_ledger["regions_registered"] == 2, m.dst_ledger
        check_destination_traffic(m)
        check_bases(m, 2 * QP)
        check_ledgers(m, 2 * QP)
        check_announce(m)
        check_rings_trusted(m.dst_vm)
        check_clean(m)
        # Unplug on the destination: the guest offlines the movable block
        # and ejects the DIMM; vhost closes and configures the device again
        # on the table without it.
        before = dst.ledger()
        m.dst_vm.qmp.cmd("device_del", id="d0")
        m.dst_vm.qmp.wait_event(lambda e: e["event"] == "DEVICE_DELETED" and e["data"].get("device") == "d0",
                                120)
        unplugged = restarted(dst, before, 1, "the device restarted on the table without the DIMM")
        assert unplugged["regions_registered"] == 1, unplugged
        check_traffic(m.dst_vm, 3)
        check_rings_trusted(m.dst_vm)
        print(f"plugged, migrated (RAM and DIMM identical), unplugged: downtime {m.downtime_ms():.0f} ms")


CASES = {"plug": case_plug}

if __name__ == "__main__":
    run_case(CASES, ("--app", {"required": True}), ("--guest-dir", {"required": True}),
             ("--qemu", {"default": qemu.QEMU}), ("--pmd", {"default": None}),
             prepare=require_qemu_and_guest)
