#!/usr/bin/env python3
"""Live migration under the real hypervisor: Debian's QEMU (TCG) moves a
Linux guest with 1 or 16 queue pairs between two vdpa-testpmd hosts, each
an mlx5async device on an emulated ConnectX-7. The guest loops ICMP through
every queue pair (tools/guest/init). Each case asserts properties only:
ring bases on the wire and in the device, traffic on the destination, the
guest's announce through the destination device, the features the guest
negotiated, identical guest memory, clean logs, processes that finish.

  test_migration.py CASE --app vdpa-testpmd --guest-dir .cache/guest
"""
import filecmp
import os
import re
import shutil
import subprocess
import sys
import time

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(TOP, "tools"))
from harness import ovs, qemu, wire  # noqa: E402
from harness.cases import Skip, run_case  # noqa: E402
from harness.migration import LEDGER_START, LEDGER_STOP, QEMU_EXPECTED, Testbed, vdev, vdevs  # noqa: E402
from harness.wait import until  # noqa: E402

PAGE = 4096
SUSPEND = 2  # PRM virtq state
# Virtio feature bits (Linux uapi virtio_net.h, virtio_config.h, vhost_types.h).
MTU, STATUS, CTRL_VQ, GUEST_ANNOUNCE, MQ, LOG_ALL, ANY_LAYOUT = 3, 16, 17, 21, 22, 26, 27
VERSION_1, RING_PACKED, ORDER_PLATFORM = 32, 34, 36
# Offered features a guest of this kind never negotiates, and why
# (doc/guides/mlx5async.md, "Virtio features").
NOT_NEGOTIATED = {
    "modern": {ANY_LAYOUT: "implied by VERSION_1: Linux's modern driver does not ask for it",
               ORDER_PLATFORM: "QEMU 7.2's virtio-net-pci does not offer it",
               RING_PACKED: "QEMU's virtio-net-pci offers it only with packed=on (the packed cases)",
               LOG_ALL: "only while a migration runs (the dirty-log case)"},
    "packed": {ANY_LAYOUT: "implied by VERSION_1: Linux's modern driver does not ask for it",
               ORDER_PLATFORM: "QEMU 7.2's virtio-net-pci does not offer it",
               LOG_ALL: "only while a migration runs (the dirty-log case)"},
    "legacy": {VERSION_1: "a legacy-only device",
               ORDER_PLATFORM: "QEMU 7.2's virtio-net-pci does not offer it",
               RING_PACKED: "a virtio 1.x feature: a legacy device cannot offer it",
               LOG_ALL: "only while a migration runs (the dirty-log case)"},
}
# Expected lines, each with where and why:
HOST_EXPECTED = [
    r"-FAILED: 0",  # vhost lists the status bits, FAILED among them
    r"^cycles: \d+ ok, 0 failed$",  # vdpa-testpmd's summary at exit
]
# vhost on the source, at each SET_VRING_ADDR of migration start: its own
# copy of a ring's used index is stale while the device runs the ring (the
# device hands back the real one at the stop).
SOURCE_EXPECTED = HOST_EXPECTED + [r"last_used_idx \(\d+\) and vq->used->idx \(\d+\) mismatches",
                                   r"some packets maybe resent"]
# vhost, when the frontend died while the host-notifier messages of a
# start that finished just before were on their way (the killed
# destination): each ring's message fails.
KILLED_EXPECTED = HOST_EXPECTED + [r"VHOST_CONFIG: .* (sendmsg|recvmsg) (error|failed) on fd \d+",
                                   r"VHOST_CONFIG: .* failed to set host notifier",
                                   r"VHOST_CONFIG: .* vhost read slave message reply failed"]


def check_bases(m, rings, started=True, device=0):
    """For every ring of NIC `device`: the source's GET_VRING_BASE answer
    (vhost's log) = the destination's SET_VRING_BASE (when its device
    `started`) = the suspended device's indexes."""
    got = m.src_host.get_bases(m.src_mark, device)
    put = m.dst_host.set_bases(m.dst_mark, device)
    dev = m.src_host.vqs(device)
    for r in range(rings):
        where = f"device {device} ring {r}"
        assert r in got, f"{where}: no GET_VRING_BASE answer on the source (got {sorted(got)})"
        if started:
            assert r in put, f"{where}: no SET_VRING_BASE on the destination (got {sorted(put)})"
            # vhost logs a packed ring's stored base without its wrap
            # counter (bit 15): the slot must match; the wrap counter is
            # proven by the destination's traffic (a wrong one hides every
            # descriptor from the device).
            want = got[r] & 0x7fff if m.dst_vm.packed else got[r]
            assert put[r] == (want, want), \
                f"{where}: source answered {got[r]}, destination set {put[r]}"
        v = dev[r]
        assert v["state"] == SUSPEND, f"{where}: source virtq in state {v['state']}, not SUSPEND"
        assert v["hw_available_index"] == got[r], \
            f"{where}: device suspended at avail {v['hw_available_index']}, vhost answered {got[r]}"
        assert v["hw_used_index"] == got[r], \
            f"{where}: device suspended at used {v['hw_used_index']} (avail {got[r]})"


def check_ledgers(m, rings, device=0):
    src = m.src_ledger_of(device) if m.src_ledgers else m.src_ledger
    dst = m.dst_ledger_of(device) if m.dst_ledgers else m.dst_ledger
    times = [src[p + "_ns"] for p in LEDGER_STOP]
    assert all(times) and times == sorted(times), f"source stop phases out of order: {src}"
    assert src["stop_rings"] == rings and src["logged_rings"] == rings, src
    if dst:
        times = [dst[p + "_ns"] for p in LEDGER_START]
        assert all(times) and times == sorted(times), f"destination start phases out of order: {dst}"
        assert dst["conf_returned_ns"] >= dst["start_requested_ns"], dst
        assert dst["start_rings"] == rings, dst


def check_announce(m, device=0):
    """The guest announced itself through the destination device after its
    RESUME: QEMU asked it to (GUEST_ANNOUNCE), its gratuitous ARP left a TX
    virtq (the ledger's announced, the virtq's announce_frames), and QEMU
    did not fall back to asking the backend for a RARP."""
    led = m.dst_ledger_of(device) if m.dst_ledgers else m.dst_ledger
    assert led["announced_ns"], f"no announce through the destination device: {led}"
    assert led["announced_ns"] >= led["all_ready_ns"], led
    assert led["announced_wall_ns"] / 1e9 >= m.resume_time(), \
        f"announced at {led['announced_wall_ns'] / 1e9:.6f}, before RESUME at {m.resume_time():.6f}"
    vqs = m.dst_host.vqs(device)
    sent = {r: v["announce_frames"] for r, v in vqs.items() if v["announce_frames"]}
    assert sent and all(r % 2 for r in sent), f"announce frames per ring: {sent}"
    rarp = [l for l in m.dst_vm.qemu_messages() if "fake RARP" in l]
    assert not rarp, f"{m.dst_vm.name}: {rarp}"


def check_device_announce(m, device=0):
    """The destination device announced the VM itself: its first RARP on
    the wire since the source's stop is from the NIC's MAC, left once its
    last virtq was RDY (a SEND_RARP QEMU sent before waits for the start)
    and before the guest's own gratuitous ARP; the source device's rounds
    ended at its stop."""
    dst = m.dst_ledger_of(device)
    stop = m.src_ledger_of(device)["stop_requested_wall_ns"]
    sent = [(t, mac) for t, mac in wire.rarps(m.dst_host.wire_pcaps[device]) if t >= stop]
    assert sent, f"device {device}: no RARP on the destination's wire since the stop: " \
        f"{m.dst_host.announce(device)}"
    t, mac = sent[0]
    assert mac == qemu.mac_of(device), f"device {device}: RARP from {mac}, the NIC is {qemu.mac_of(device)}"
    assert t >= dst["all_ready_wall_ns"], \
        f"device {device}: RARP at {t}, before the last virtq was RDY at {dst['all_ready_wall_ns']}"
    assert dst["device_announced_ns"] >= dst["all_ready_ns"], dst
    if dst["announced_ns"]:
        assert t <= dst["announced_wall_ns"], \
            f"device {device}: RARP at {t}, after the guest's own announce at {dst['announced_wall_ns']}"
    src = m.src_host.announce(device)
    assert src["on"] and src["rounds_left"] == 0, f"source device {device} still announcing: {src}"


def check_features(m, kind="modern", device=0):
    """Every feature the destination device offers was negotiated, with
    vhost (what QEMU acked for the guest) and in the guest's own driver,
    but those this kind of guest never takes (NOT_NEGOTIATED; MQ with one
    queue pair, where QEMU runs mq=off); and the guest has what its
    announce needs (GUEST_ANNOUNCE, CTRL_VQ, STATUS)."""
    info = m.dst_host.info(device)
    offered, acked = info["features"], info["negotiated_features"]
    skip = dict(NOT_NEGOTIATED[kind])
    if m.dst_vm.queue_pairs == 1:
        skip[MQ] = "one queue pair: mq=off"
    missing = [b for b in range(64) if offered >> b & 1 and not acked >> b & 1 and b not in skip]
    assert not missing, f"offered {offered:#x}, vhost negotiated {acked:#x}: bits {missing} missing"
    guest = qemu.guest_features(m.dst_vm.up_line)
    for b in (GUEST_ANNOUNCE, CTRL_VQ, STATUS, MTU) + ((ANY_LAYOUT,) if kind == "legacy" else (VERSION_1,)) \
            + ((RING_PACKED,) if kind == "packed" else ()):
        assert guest >> b & 1, f"the guest's driver did not negotiate bit {b}: {guest:#x}"
    assert info["vhost_mtu"] == qemu.MTU, f"vhost MTU {info['vhost_mtu']}, QEMU's host_mtu {qemu.MTU}"


def totals(line):
    return sum(line[1].values()), sum(line[2].values())


def check_traffic(vm, lines=3, timeout=120):
    """On every NIC the guest's rx keeps growing, and every queue pair whose
    TX queue sent gets its packets back on its RX queue."""
    for nic in range(vm.nics):
        first = len(vm.stats(nic))
        s = vm.wait_stats(first, lines, timeout, nic)
        a, b = s[first], s[-1]
        assert totals(b)[0] > totals(a)[0], \
            f"{vm.name}: eth{nic}: rx did not grow: {a} -> {b}\n{vm.host.report(nic)}"
        for q in b[2]:
            if b[2][q] > a[2].get(q, 0):
                assert b[1].get(q, 0) > a[1].get(q, 0), \
                    f"{vm.name}: eth{nic}: queue {q} sent but received nothing\n{vm.host.report(nic)}"


def check_destination_traffic(m):
    """check_traffic on the migrated guest; a failure also tells what the
    hosts handed over."""
    try:
        check_traffic(m.dst_vm)
    except AssertionError as e:
        raise AssertionError(f"{e}\n{m.handover_report()}") from None


def check_clean(m, expected=()):
    """No error line in either host since the migration began (but the
    `expected` ones of its application), nor any message from QEMU."""
    bad = m.src_host.bad_lines(m.src_mark, SOURCE_EXPECTED + list(expected)) + \
        m.dst_host.bad_lines(m.dst_mark, HOST_EXPECTED + list(expected))
    assert not bad, "error lines in the hosts:\n" + "\n".join(bad)
    for vm in (m.src_vm, m.dst_vm):
        msgs = [l for l in vm.qemu_messages() if not any(re.search(x, l) for x in QEMU_EXPECTED)]
        assert not msgs, f"{vm.name}: QEMU said:\n" + "\n".join(msgs)


def one_migration(bed, strategy, page_per_vq=False, dst_extra=""):
    """One migration of a VM with bed.nics NICs between two hosts with a
    device per NIC, and every check on each."""
    qp = bed.queue_pairs
    src = bed.host("src", vdevs(bed.nics, qp, strategy))
    dst = bed.host("dst", vdevs(bed.nics, qp, strategy, dst_extra))
    vm = bed.boot(src, page_per_vq=page_per_vq)
    check_traffic(vm, 2)
    m = bed.migrate(vm, src, dst, page_per_vq=page_per_vq)
    check_destination_traffic(m)
    for k in range(bed.nics):
        check_bases(m, 2 * qp, device=k)
        check_ledgers(m, 2 * qp, k)
        check_announce(m, k)
        check_device_announce(m, k)
        check_features(m, "legacy" if bed.legacy else "packed" if bed.packed else "modern", k)
    check_clean(m)
    return m


def case_pairs(qp, strategy):
    def run(a):
        with bed_of(a, qp) as bed:
            m = one_migration(bed, strategy)
            # Without page-per-vq QEMU refuses host notifiers: kicks go through the relay.
            assert notifiers_rc(m) != 0, "QEMU took host notifiers without page-per-vq"
            print(f"migrated: downtime {m.downtime_ms():.0f} ms, device stop {m.stop_ms():.3f} ms, "
                  f"start {m.start_ms():.3f} ms")
    return run


def case_dirty_log(a):
    """With the destination paused (-S) its device never starts, so after
    the migration both guests' RAM must be identical page for page: every
    page the source's device wrote during the pre-copy (RX buffers, used
    rings) was logged dirty and sent again. Then the destination runs on
    that RAM: its device starts from the bases and the guest's traffic and
    announce go through it."""
    with bed_of(a, 16) as bed:
        dirty_log(bed)


def dirty_log(bed):
    """The dirty-log case on `bed` (its guest shape)."""
    src = bed.host("src", vdev(16, "async"))
    dst = bed.host("dst", vdev(16, "async"))
    vm = bed.boot(src)
    check_traffic(vm, 2)
    mark = src.mark()
    m = slow_paused_migration(bed, vm, src, dst)
    # VHOST_F_LOG_ALL negotiated for the pre-copy, and the device logging.
    src.wait_line(lambda l: "dirty logging on" in l, 10, "dirty logging on", since=mark)
    check_bases(m, 32, started=False)
    assert not m.dst_host.set_bases(m.dst_mark), "the paused destination started its device"
    check_ledgers(m, 32)
    check_ram(bed, m)
    assert m.src_host.get_bases(m.src_mark), "no ring stopped on the source"
    bed.resume(m)
    check_destination_traffic(m)
    check_bases(m, 32)
    check_ledgers(m, 32)
    check_announce(m)
    check_clean(m)


def case_cpu_stores(a):
    """Every page the guest's CPU writes during the pre-copy reaches the
    destination: a guest whose shell counts without pause and which sends
    no traffic (so that few context switches flush its TLB: its stores go
    through entries that outlive QEMU's dirty-bitmap syncs, which QEMU 7.2's
    TCG loses for some RAM sizes, see qemu.RAM_TAIL), migrated slowly to a
    paused destination, has RAM identical to the source's page for page,
    and then runs on it: it announces itself through the destination's
    device."""
    with bed_of(a, 2) as bed:
        bed.vm_options = {"guest_args": ("mlx5a.stores=1", "mlx5a.peers=0")}
        src = bed.host("src", vdev(2, "async"))
        dst = bed.host("dst", vdev(2, "async"))
        vm = bed.boot(src)
        assert any("mlx5a-guest: counting (stores)" in l for l in vm.console()), \
            "the guest does not count: its init took no mlx5a.stores=1"
        # A 5 ms downtime limit: QEMU iterates until a sync finds few dirty
        # pages, as when such stores were lost.
        m = bed.migrate(vm, src, dst, paused=True, max_bandwidth=48 << 20,
                        parameters={"downtime-limit": 5})
        info = m.info.get("ram", {})
        print(f"migrated in {info.get('dirty-sync-count')} dirty-bitmap syncs")
        check_ram(bed, m)
        bed.resume(m)
        check_announce(m)
        check_clean(m)


def slow_paused_migration(bed, vm, src, dst):
    """A migration whose pre-copy is slowed (~2 s with traffic: the device
    writes many pages after QEMU sent them) to a destination left paused
    (-S: its device never starts), so that both guests' RAM can be compared."""
    return bed.migrate(vm, src, dst, paused=True, max_bandwidth=48 << 20)


def check_ram(bed, m, ranges=((0, qemu.MEM_BYTES),)):
    """Both guests' RAM identical page for page over `ranges` (guest
    physical (address, size)): every page the source's device wrote during
    the pre-copy (RX buffers, used rings) was logged dirty and sent again.
    Both VMs must be stopped."""
    for gpa, size in ranges:
        check_ram_range(bed, m, gpa, size)


def check_ram_range(bed, m, gpa, size):
    dumps = []
    for side in (m.src_vm, m.dst_vm):
        path = os.path.join(bed.workdir, f"{side.name}-{gpa:x}.ram")
        side.qmp.cmd("pmemsave", val=gpa, size=size, filename=path)
        dumps.append(path)
    if not filecmp.cmp(dumps[0], dumps[1], shallow=False):
        with open(dumps[0], "rb") as f0, open(dumps[1], "rb") as f1:
            diff = []
            page = 0
            while True:
                x, y = f0.read(PAGE), f1.read(PAGE)
                if not x and not y:
                    break
                if x != y:
                    diff.append((page, x, y))
                page += 1
        # The differing bytes of the first pages say whose page it is
        # (a used ring's elements, a frame's headers, kernel data).
        shown = [page_difference(gpa + p * PAGE, x, y) for p, x, y in diff[:4]]
        raise AssertionError(f"{len(diff)} guest pages differ after migration, e.g. GPA "
                             + ", ".join(hex(gpa + p * PAGE) for p, _, _ in diff[:8])
                             + "\n" + "\n".join(shown))
    for path in dumps:
        os.unlink(path)
    print(f"guest RAM identical from {gpa:#x} ({size // PAGE} pages)")


def page_difference(gpa, src, dst):
    """Where one page differs between the source's copy and the
    destination's: the differing ranges, with both copies' bytes."""
    ranges, i = [], 0
    while i < len(src):
        if src[i] == dst[i]:
            i += 1
            continue
        j = i
        while j < len(src) and src[j] != dst[j]:
            j += 1
        ranges.append((i, j))
        i = j
    lines = [f"GPA {gpa:#x}: {sum(j - i for i, j in ranges)} bytes differ in {len(ranges)} ranges"]
    for i, j in ranges[:6]:
        lo, hi = i & ~15, min(len(src), max(j, i + 16) + 15 & ~15)
        lines.append(f"  +{lo:#05x} src {src[lo:hi].hex(' ')}")
        lines.append(f"  +{lo:#05x} dst {dst[lo:hi].hex(' ')}")
    return "\n".join(lines)


def case_packed(strategy):
    """Packed virtqueues (QEMU packed=on): the guest's driver and vhost
    negotiate RING_PACKED, the device runs every ring packed (traffic on
    every pair), and a live migration hands the rings' positions with
    their wrap counters to the destination, which runs on from them."""
    def run(a):
        with bed_of(a, 2, packed=True) as bed:
            m = one_migration(bed, strategy)
            print(f"packed rings migrated: downtime {m.downtime_ms():.0f} ms, "
                  f"device stop {m.stop_ms():.3f} ms, start {m.start_ms():.3f} ms")
    return run


def case_packed_dirty_log(a):
    """The dirty-log case on packed rings: every used descriptor the
    source's device wrote over its descriptor rings, and every RX buffer,
    was logged, so the paused guests' RAM is identical page for page."""
    with bed_of(a, 16, packed=True) as bed:
        dirty_log(bed)


def case_legacy(a):
    """A legacy-only virtio-net (no VERSION_1): Linux's legacy driver asks
    for ANY_LAYOUT, which the device offers, and the rings run with the
    legacy header (10 bytes, 12 with MRG_RXBUF)."""
    with bed_of(a, 4, legacy=True) as bed:
        m = one_migration(bed, "async")
        print(f"legacy guest migrated: downtime {m.downtime_ms():.0f} ms")


# 2 MiB pages for two guests of qemu.MEM_BYTES and two hosts' EAL (256 MB
# each), with room for QEMU's own use.
HUGEPAGES = 2 * -(-qemu.MEM_BYTES // (2 << 20)) + 2 * 128 + 64


def case_hugepages(a):
    """The production shape: the guest's RAM on hugetlbfs (2 MiB pages,
    memory-backend-file with share=on) and both hosts' EAL on hugepages, so
    the emulated device registers the guest's memory in place, in 2 MiB
    pages. The migration and its checks as pairs16-async."""
    with bed_of(a, 16, hugepages=HUGEPAGES) as bed:
        m = one_migration(bed, "async")
        # The hosts' EAL (256 MB each) and the guests' RAM are on the mount.
        used = bed.hugepages.used()
        assert used > 2 * 128, f"{used} hugepages in use: the hosts or guests are not on them"
        print(f"hugepage guest migrated: {used} pages of 2 MiB in use, downtime "
              f"{m.downtime_ms():.0f} ms, destination start {m.start_ms():.3f} ms")


def case_hugepages_dirty_log(a):
    """The dirty-log case on hugepages: the device's writes into a
    hugetlbfs guest, through its in-place view, are all logged."""
    with bed_of(a, 16, hugepages=HUGEPAGES) as bed:
        dirty_log(bed)


def case_nics(strategy, nics=4, queue_pairs=4):
    """A VM with `nics` NICs of `queue_pairs`, each a device of its own on
    both hosts: every NIC's bases, ledgers, traffic, announce and features."""
    def run(a):
        with bed_of(a, queue_pairs, nics=nics) as bed:
            m = one_migration(bed, strategy)
            print(f"{nics} NICs migrated: VM network downtime {m.vm_network_ms():.1f} ms")
    return run


def case_nics_overlap(a):
    """The destination's memory registration slowed (its devices' firmware
    writes translations slowly: each start is about 1.6 s): the four
    devices' starts (ledger: start_requested to all_ready) overlap, and the
    VM's network downtime (the first source device's stop request to the
    last destination device's all_ready) with 4 NICs stays within 1.5x that
    of 1 NIC under the same slowing, both measured in this run. Started one
    after another, as when dev_conf ran the start, 4 NICs took 4 starts."""
    slow = "emu_mtt_ns=100000"  # 65536 translation entries on 4 lanes: ~1.6 s per device
    with bed_of(a, 4) as bed:
        one = one_migration(bed, "async", dst_extra=slow)
    with bed_of(a, 4, nics=4) as bed:
        four = one_migration(bed, "async", dst_extra=slow)
    spans = [(l["start_requested_wall_ns"], l["all_ready_wall_ns"]) for l in four.dst_ledgers]
    for i, x in enumerate(spans):
        for j, y in enumerate(spans[i + 1:], i + 1):
            assert x[0] < y[1] and y[0] < x[1], \
                f"devices {i} and {j} started one after the other: {x} and {y} (ns)"
    d1, d4 = one.vm_network_ms(), four.vm_network_ms()
    starts = [(b - a) / 1e6 for a, b in spans]
    print(f"VM network downtime: 1 NIC {d1:.1f} ms, 4 NICs {d4:.1f} ms ({d4 / d1:.2f}x); "
          f"the 4 starts: " + ", ".join(f"{t:.0f}" for t in starts) + " ms")
    assert d4 <= 1.5 * d1, f"4 NICs {d4:.1f} ms > 1.5 x 1 NIC {d1:.1f} ms"


def case_vms4_nics2(a):
    """Four guests with 2 NICs each (a device per NIC: 8 on each host)
    migrate between the same two hosts at the same time, to destinations
    left paused so that each guest's RAM can be compared page by page; then
    all four resume at once. The destination's memory registration is
    slowed (as in nics4-overlap) so that the eight starts, each about 1.6 s,
    must overlap: pairwise, start_requested to all_ready in the devices'
    ledgers. Every device's bases, ledgers and announce, every guest's
    traffic on the destination."""
    vms, nics, qp = 4, 2, 2
    slow = "emu_mtt_ns=100000"
    with bed_of(a, qp, nics=nics) as bed:
        src = bed.host("src", vdevs(vms * nics, qp, "async"))
        dst = bed.host("dst", vdevs(vms * nics, qp, "async", slow))
        guests = [bed.boot(src, first_device=i * nics, wait=False) for i in range(vms)]
        for vm in guests:  # booting together: the 2 CPUs run all four
            bed.booted_on(vm, timeout=600)
        for vm in guests:
            check_traffic(vm, 2, timeout=300)
        ms = [bed.start(vm, src, dst, paused=True, timeout=600) for vm in guests]
        ms = [bed.finish(m) for m in ms]
        for m in ms:
            check_ram(bed, m)
        bed.resume_all(ms, timeout=600)
        for m in ms:
            check_destination_traffic(m)
            for k in m.devices:
                check_bases(m, 2 * qp, device=k)
                check_ledgers(m, 2 * qp, k)
                check_announce(m, k)
                check_device_announce(m, k)
            check_clean(m)
        spans = {k: (m.dst_ledger_of(k)["start_requested_wall_ns"], m.dst_ledger_of(k)["all_ready_wall_ns"])
                 for m in ms for k in m.devices}
        for i, x in spans.items():
            for j, y in spans.items():
                assert i == j or (x[0] < y[1] and y[0] < x[1]), \
                    f"devices {i} and {j} started one after the other: {x} and {y} (ns)"
        first = min(x[0] for x in spans.values())
        print(f"{vms} guests x {nics} NICs migrated together; the {len(spans)} destination starts "
              f"(ms from the first start request): " +
              ", ".join(f"{k}: {(x[0] - first) / 1e6:.0f}-{(x[1] - first) / 1e6:.0f}"
                        for k, x in sorted(spans.items())))


def case_application(host_kind, queue_pairs, expected=()):
    """An unmodified DPDK application that knows no vDPA device (Debian's
    dpdk-testpmd, OVS-DPDK) loads the PMD (-d) on both hosts; the driver
    serves the guest on a socket of its own (devarg vhost_socket). Traffic
    on the source; one migration with a slowed pre-copy to a paused
    destination: both guests' RAM identical; then the destination runs:
    ring bases, ledgers, traffic, announce, features, and no error line
    but the application's own `expected` ones."""
    def run(a):
        with Testbed(a.app, a.guest_dir, queue_pairs, qemu=a.qemu, host_kind=host_kind, pmd=a.pmd) as bed:
            src = bed.host("src", vdev(queue_pairs, "async"))
            dst = bed.host("dst", vdev(queue_pairs, "async"))
            vm = bed.boot(src)
            check_traffic(vm, 2)
            m = slow_paused_migration(bed, vm, src, dst)
            check_ram(bed, m)
            bed.resume(m)
            check_destination_traffic(m)
            check_bases(m, 2 * queue_pairs)
            check_ledgers(m, 2 * queue_pairs)
            check_announce(m)
            check_device_announce(m)
            check_features(m)
            check_clean(m, expected)
            print(f"{host_kind}: migrated, downtime {m.downtime_ms():.0f} ms")
    return run


def case_guest_announce_off(a):
    """A guest without GUEST_ANNOUNCE (QEMU guest_announce=off) announces
    nothing itself: QEMU asks the backend (SEND_RARP, the protocol feature
    RARP offered) with the NIC's MAC, and the destination device's RARPs
    announce it; QEMU never says it could not."""
    with bed_of(a, 1, guest_announce=False) as bed:
        src = bed.host("src", vdevs(1, 1, "async"))
        dst = bed.host("dst", vdevs(1, 1, "async"))
        vm = bed.boot(src)
        check_traffic(vm, 2)
        m = bed.migrate(vm, src, dst)
        check_destination_traffic(m)
        check_bases(m, 2)
        check_ledgers(m, 2)
        check_device_announce(m)
        assert not m.dst_ledger["announced_ns"], f"the guest announced itself: {m.dst_ledger}"
        assert not m.dst_host.info()["negotiated_features"] >> GUEST_ANNOUNCE & 1, m.dst_host.info()
        ann = until(m.dst_host.announce, lambda s: s["requests"] > 0, 60, "a SEND_RARP on the destination")
        assert ann["frontend_mac"] == qemu.mac_of(0), ann
        # The wire's pcap as tcpdump reads it.
        out = subprocess.run(["tcpdump", "-nn", "-e", "-r", m.dst_host.wire_pcaps[0]], capture_output=True,
                             text=True, check=True).stdout
        assert f"{qemu.mac_of(0)} > ff:ff:ff:ff:ff:ff, ethertype Reverse ARP" in out, out
        check_clean(m)
        print(f"announced without GUEST_ANNOUNCE: {ann['requests']} SEND_RARP, {ann['posted']} RARPs sent")


def case_announce_off(a):
    """announce=off on the destination: the device sends nothing to the
    network, offers no RARP protocol feature, stamps no device_announced;
    the guest's own announce still goes through it."""
    with bed_of(a, 1) as bed:
        src = bed.host("src", vdevs(1, 1, "async"))
        dst = bed.host("dst", vdevs(1, 1, "async", "announce=off"))
        vm = bed.boot(src)
        m = bed.migrate(vm, src, dst)
        check_destination_traffic(m)
        check_announce(m)
        assert m.dst_host.announce() == {"on": 0, "wire_frames": 0, "wire_bytes": 0, "wire_rarp": 0,
                                         "wire_arp": 0, "wire_ipv4": 0, "wire_ipv6": 0, "wire_other": 0,
                                         "wire_pcap_errors": 0}, m.dst_host.announce()
        assert wire.frames(m.dst_host.wire_pcaps[0]) == []
        assert not m.dst_ledger["device_announced_ns"], m.dst_ledger
        assert m.first_rarp_ms() is None
        check_clean(m)


def case_ping_pong(a):
    """Three migrations back and forth with host notifiers on
    (page-per-vq=on): each host serves the next frontend after its guest
    left."""
    with bed_of(a, 16) as bed:
        hosts = [bed.host("h0", vdev(16, "async")), bed.host("h1", vdev(16, "async"))]
        vm = bed.boot(hosts[0], page_per_vq=True)
        check_traffic(vm, 2)
        for i in range(3):
            src, dst = hosts[i % 2], hosts[(i + 1) % 2]
            m = bed.migrate(vm, src, dst, page_per_vq=True)
            check_bases(m, 32)
            check_ledgers(m, 32)
            check_destination_traffic(m)
            assert notifiers_rc(m) == 0, f"migration {i + 1}: host notifiers not on"
            check_clean(m)
            vm.terminate()  # the source QEMU quits, as after a real migration
            vm = m.dst_vm
            print(f"migration {i + 1}: {src.name} -> {dst.name}, downtime {m.downtime_ms():.0f} ms")
        # Both hosts shut down cleanly: the device's objects, the log's mkey
        # among them, go before the PD and the context.
        vm.terminate()
        for h in hosts:
            mark = h.mark()
            assert h.stop() == 0, f"{h.name}: vdpa-testpmd failed"
            bad = h.bad_lines(mark, HOST_EXPECTED)
            assert not bad, f"{h.name}: at shutdown:\n" + "\n".join(bad)


def case_kill_during_conf(nics):
    """The destination QEMU gets SIGTERM while its devices' starts run on
    slow firmware: QEMU then stops vhost, sending each device GET_VRING_BASE
    while its start runs, with the host notifiers' slave-channel message
    pending. QEMU and the host both finish; the host then serves the next
    frontend: the source resumes and migrates there. A start its stop
    abandoned asks for no host notifiers (none can reach the next frontend,
    which reuses its vid). With `nics` NICs each is a device of its own."""
    def run(a):
        qp = 16 // nics
        slow = "emu_modify_us=100000,timeout_ms=30000"  # sequential MODIFYs: a 3 s start for 32 virtqs
        with bed_of(a, qp, nics=nics) as bed:
            src = bed.host("src", vdevs(nics, qp, "async"))
            dst = bed.host("dst", vdevs(nics, qp, "sequential", slow))
            vm = bed.boot(src, page_per_vq=True)
            check_traffic(vm, 2)
            before, mark = [dst.ledger(k) for k in range(nics)], dst.mark()
            victim = bed.begin(vm, dst, page_per_vq=True)
            for k in range(nics):
                led = until(lambda: dst.ledger(k), lambda l: l["start_seq"] > before[k]["start_seq"],
                            240, f"device {k}'s dev_conf to begin")
                assert not led["all_ready_ns"], f"device {k}'s start already finished: firmware not slow enough"
            rc = victim.terminate(timeout=60)
            assert rc == 0, f"destination QEMU exited {rc}"
            for k in range(nics):
                led = until(lambda: dst.ledger(k), lambda l: l["stop_seq"] > before[k]["stop_seq"], 60,
                            f"device {k}'s stop after the kill")
                assert led["start_seq"] == before[k]["start_seq"] + 1, led
                if not led["all_ready_ns"]:
                    # Its stop abandoned the start: no host notifiers were asked for.
                    sock = re.escape(dst.sockets[k])
                    asked = [l for l in dst.output()[mark:] if re.search(rf"\({sock}\) .*host notifier", l)]
                    assert not asked, f"device {k}: host notifiers of an abandoned start:\n" + "\n".join(asked)
            assert dst.alive(), "destination host died"
            bad = dst.bad_lines(mark, KILLED_EXPECTED)
            assert not bad, "error lines on the destination host:\n" + "\n".join(bad)
            # The source's migration completed, but the guest lives on there.
            vm.qmp.cmd("cont")
            check_traffic(vm, 2)
            m = bed.migrate(vm, src, dst, page_per_vq=True)
            check_destination_traffic(m)
            for k in range(nics):
                check_bases(m, 2 * qp, device=k)
                check_ledgers(m, 2 * qp, k)
            check_clean(m)
            print(f"destination killed during its starts; next migration downtime {m.downtime_ms():.0f} ms")
    return run


def case_sigterm_during_starts(a):
    """SIGTERM to a host whose four devices' starts run on slow firmware
    (the migration's destination): it ends with nothing left of its
    sockets, and the source guest runs on. A device's stop never waits for
    the rest of its start: a start that had not finished when its device
    was stopped (vhost closing its connection) gives up what it had not
    issued, so no start finishes after its device's stop. The app stops
    the devices one after another, so the last ones' starts may finish
    before their stop comes."""
    slow = "emu_modify_us=100000,timeout_ms=30000"
    with bed_of(a, 4, nics=4) as bed:
        src = bed.host("src", vdevs(4, 4, "async"))
        dst = bed.host("dst", vdevs(4, 4, "sequential", slow))
        vm = bed.boot(src)
        check_traffic(vm, 2)
        before = [dst.ledger(k) for k in range(4)]
        mark = dst.mark()
        bed.begin(vm, dst)
        for k in range(4):
            until(lambda: dst.ledger(k), lambda l: l["start_seq"] > before[k]["start_seq"], 240,
                  f"device {k}'s dev_conf to begin")
        t0 = time.monotonic()
        rc = dst.terminate(timeout=30)
        took = time.monotonic() - t0
        print(f"destination host ended {took:.1f} s after SIGTERM (rc {rc})")
        assert rc == 0, f"destination host exited {rc}"
        for sock in dst.sockets:
            assert not os.path.exists(sock), f"{sock} left behind"
        check_stops_cut_starts(dst.output()[mark:], 4)
        vm.qmp.cmd("cont")
        check_traffic(vm, 2)


def check_stops_cut_starts(lines, devices):
    """In a host's log, each device's start outcome (started, or given up)
    comes before vhost freed its connection unless the start gave up: a
    start that finished after its device's stop would mean the stop waited
    for it. Device k serves socket ...vhost<k>."""
    for k in range(devices):
        closed = next((i for i, l in enumerate(lines) if f"vhost{k}) free connfd" in l), None)
        assert closed is not None, f"device {k}: vhost never freed its connection"
        outcome = [(i, l) for i, l in enumerate(lines)
                   if f"vdpa_mlx5async{k}" in l and (" started, " in l or "start abandoned" in l or
                                                       "start superseded" in l)]
        assert len(outcome) == 1, f"device {k}: start outcomes {outcome}"
        i, line = outcome[0]
        assert i < closed or "started, " not in line, \
            f"device {k}: its start finished after its stop: {line}"


def notifiers_rc(m):
    """The destination's host-notifier result, once its thread got QEMU's
    answer (after dev_conf returned)."""
    seq = m.dst_ledger["start_seq"]
    led = until(m.dst_host.ledger, lambda l: l["notifiers_tried"] or l["start_seq"] != seq,
                60, "host-notifier answer")
    assert led["start_seq"] == seq, f"another start began: {led}"
    return led["notifiers_rc"]


def bed_of(a, queue_pairs, legacy=False, hugepages=0, nics=1, guest_announce=True, packed=False):
    """A Testbed of the case's app, guest and QEMU; `packed`: the guests'
    NICs run packed virtqueues."""
    return Testbed(a.app, a.guest_dir, queue_pairs, legacy=legacy, hugepages=hugepages, nics=nics,
                   qemu=a.qemu, guest_announce=guest_announce, packed=packed)


CASES = {
    "pairs1-async": case_pairs(1, "async"),
    "pairs1-sequential": case_pairs(1, "sequential"),
    "pairs16-async": case_pairs(16, "async"),
    "pairs16-sequential": case_pairs(16, "sequential"),
    "dirty-log": case_dirty_log,
    "cpu-stores": case_cpu_stores,
    "legacy": case_legacy,
    "hugepages": case_hugepages,
    "hugepages-dirty-log": case_hugepages_dirty_log,
    "ping-pong": case_ping_pong,
    "guest-announce-off": case_guest_announce_off,
    "packed-async": case_packed("async"),
    "packed-sequential": case_packed("sequential"),
    "packed-dirty-log": case_packed_dirty_log,
    "announce-off": case_announce_off,
    "kill-during-conf": case_kill_during_conf(1),
    "nics4-async": case_nics("async"),
    "nics4-sequential": case_nics("sequential"),
    "nics8-async": case_nics("async", nics=8, queue_pairs=2),
    "nics4-overlap": case_nics_overlap,
    "vms4-nics2": case_vms4_nics2,
    "nics4-kill-during-conf": case_kill_during_conf(4),
    "nics4-sigterm-during-starts": case_sigterm_during_starts,
    "dpdk-testpmd": case_application("dpdk-testpmd", 4),
    "ovs-dpdk": case_application("ovs", 2),
}


def require_qemu_and_guest(a):
    """Without QEMU or the guest (tools/setup installs and builds both) the
    cases cannot run: skipped, never passed; so are the application cases
    without their application."""
    if a.case == "dpdk-testpmd" and not shutil.which("dpdk-testpmd"):
        raise Skip("dpdk-testpmd not found: tools/setup installs Debian's dpdk")
    if a.case == "ovs-dpdk":
        if ovs.missing():
            raise Skip(ovs.missing())
        if os.geteuid() != 0:
            raise Skip("OVS-DPDK's EAL runs on hugepages, which only root can reserve")
    if a.case in ("dpdk-testpmd", "ovs-dpdk") and not a.pmd:
        raise Skip("no --pmd: the PMD plugin these applications load with -d")
    if not shutil.which(a.qemu):
        raise Skip(f"{a.qemu} not found: tools/setup installs Debian's qemu-system-x86")
    for f in ("vmlinuz", "initrd.gz"):
        if not os.path.exists(os.path.join(a.guest_dir, f)):
            raise Skip(f"no guest in {a.guest_dir}: tools/setup builds it (tools/guest/build)")


if __name__ == "__main__":
    run_case(CASES, ("--app", {"required": True}), ("--guest-dir", {"required": True}),
             ("--qemu", {"default": qemu.QEMU}), ("--pmd", {"default": None}),
             prepare=require_qemu_and_guest)
