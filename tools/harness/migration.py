"""Live migrations of one guest between mlx5async hosts, as the migration
tests and `./run migrate` run them: QEMU's own migration over a unix
socket, the destination started with `-incoming defer`, QMP events on both
sides, and the PMD's downtime ledger of both hosts."""
import itertools
import os
import time

from . import ovs, wire
from .host import EAL_MIGRATION, dpdk_testpmd, hugepage_eal, vdpa_testpmd
from .hugepages import Hugepages
from .proc import Workdir
from .qemu import QEMU, Vm, booted, mac_of
from .wait import until

_seq = itertools.count()

LEDGER_STOP = ["stop_requested", "suspend_issued", "suspend_done", "bases_handed_back",
               "used_rings_logged"]
# The start's own steps, in order; dev_conf returns (conf_returned) once the
# start is posted, before or during them.
LEDGER_START = ["start_requested", "memory_registered", "virtqs_created", "all_ready"]
# What QEMU may say that is not a failure (nothing). A backend that offers
# neither GUEST_ANNOUNCE nor VHOST_USER_PROTOCOL_F_RARP makes it say "Vhost
# user backend fails to broadcast fake RARP": a migrated VM nobody announces
# (doc/guides/live-migration.md, "Announce").
QEMU_EXPECTED = []


def vdev(queue_pairs, strategy, extra="", index=0):
    return (f"vdpa_mlx5async{index},emu=cx7,queues={queue_pairs},queue_size=256,strategy={strategy}" +
            (f",{extra}" if extra else ""))


def vdevs(devices, queue_pairs, strategy, extra=""):
    """A device per NIC: vdpa_mlx5async0 .. devices-1."""
    return [vdev(queue_pairs, strategy, extra, k) for k in range(devices)]


class Migration:
    """What one migration did, read from both QEMUs and both hosts."""

    def __init__(self, src_vm, dst_vm, src_host, dst_host, src_mark, dst_mark):
        self.src_vm, self.dst_vm = src_vm, dst_vm
        # The host devices that serve the VM's NICs, NIC k on devices[k]
        # (the same on both hosts); the ledger lists below follow them.
        self.devices = list(range(src_vm.first_device, src_vm.first_device + src_vm.nics))
        self.src_host, self.dst_host = src_host, dst_host
        self.src_mark, self.dst_mark = src_mark, dst_mark
        self.info = {}          # the source's final query-migrate
        self.src_ledger = {}    # the source host's ledger after the stop (device 0)
        self.dst_ledger = {}    # the destination host's after the start (empty when paused)
        self.src_ledgers = []   # every device's, a NIC each
        self.dst_ledgers = []
        self.src_events = []    # QMP events with their wall times
        self.dst_events = []
        self.deadline = 0       # monotonic time by which finish() gives up
        self.paused = False     # the destination left stopped (-S)
        self.src_before = []    # each device's ledger before the migration
        self.dst_before = []

    def src_ledger_of(self, device):
        """The source host's ledger of host device `device` after the stop."""
        return self.src_ledgers[self.devices.index(device)]

    def dst_ledger_of(self, device):
        return self.dst_ledgers[self.devices.index(device)]

    @property
    def status(self):
        return self.info.get("status")

    def downtime_ms(self):
        return float(self.info.get("downtime", 0))

    def total_ms(self):
        return float(self.info.get("total-time", 0))

    def stop_ms(self):
        return self.src_ledger.get("stop_ns", 0) / 1e6

    def start_ms(self):
        return self.dst_ledger.get("start_ns", 0) / 1e6

    def resume_time(self):
        """The destination VM's RESUME, on QEMU's wall clock (s)."""
        return next(e["time"] for e in self.dst_events if e["event"] == "RESUME")

    def network_ms(self, phase):
        """From the source device's stop request to the destination
        ledger's `phase` (all_ready, device_announced, announced), on the
        one wall clock."""
        return (self.dst_ledger[phase + "_wall_ns"] - self.src_ledger["stop_requested_wall_ns"]) / 1e6

    def first_rarp_ms(self, device=0):
        """From the source device's stop request to the destination
        device's first RARP on the wire (its pcap), on the one wall clock;
        None when it sent none since the stop."""
        stop = self.src_ledger_of(device)["stop_requested_wall_ns"]
        after = [t for t, _ in wire.rarps(self.dst_host.wire_pcaps[device]) if t >= stop]
        return (min(after) - stop) / 1e6 if after else None

    def vm_network_ms(self):
        """The VM's network downtime over all its NICs: the first source
        device's stop request to the last destination device's all_ready."""
        first = min(l["stop_requested_wall_ns"] for l in self.src_ledgers)
        last = max(l["all_ready_wall_ns"] for l in self.dst_ledgers)
        return (last - first) / 1e6

    def handover_report(self):
        """What the hosts handed over, for a destination that stopped
        working: per NIC the source's GET_VRING_BASE answers and the
        destination's SET_VRING_BASE (avail, used) that differ, both
        devices' virtqs, and both hosts' warning and error lines since the
        migration began (vhost names a used index it found different from
        the base it was given)."""
        out = []
        for k in self.devices:
            got = self.src_host.get_bases(self.src_mark, k)
            put = self.dst_host.set_bases(self.dst_mark, k)
            differ = {r: (got.get(r), put.get(r)) for r in sorted(set(got) | set(put))
                      if put.get(r) != (got.get(r), got.get(r))}
            out.append(f"device {k}: {len(got)} bases answered, {len(put)} set, differing "
                       f"(answered, set): {differ}")
            out += [self.src_host.report(k), self.dst_host.report(k)]
        for host, mark in ((self.src_host, self.src_mark), (self.dst_host, self.dst_mark)):
            out += [f"{host.name}: {line}" for line in host.bad_lines(mark)[-20:]]
        return "\n".join(out)


# The programs a Testbed's hosts run (Testbed's host_kind): vdpa-testpmd
# attaches each device to a socket itself; in Debian's dpdk-testpmd and
# OVS-DPDK, which know no vDPA device, the driver serves it on a socket of
# its own (devarg vhost_socket).
HOST_KINDS = ("vdpa-testpmd", "dpdk-testpmd", "ovs")


class Testbed:
    """Hosts (one emulated cx7 each) and the guests booted or migrated
    between them, in a private folder. Used as a context manager: leaving it
    ends every process, gives hugepages back and removes the folder, which
    is kept (the tail of each log printed) when the block failed."""

    def __init__(self, app, guest_dir, queue_pairs, legacy=False, hugepages=0,
                 announce_initial=None, nics=1, qemu=QEMU, host_kind="vdpa-testpmd", pmd=None,
                 guest_announce=True, packed=False):
        """Guests with `nics` NICs (a device of the host each) of
        `queue_pairs`, legacy-only virtio-net with `legacy`; with
        `hugepages`, that many 2 MiB pages reserved and mounted in the folder,
        the guests' RAM and the hosts' EAL on them; QEMU's announce-initial
        (ms) set on both sides when given. Hosts run `host_kind` (HOST_KINDS):
        `app` (vdpa-testpmd), or the PMD `pmd` loaded into dpdk-testpmd or
        ovs-vswitchd-dpdk (whose EAL needs ovs.HUGEPAGES reserved, without
        a mount). Without `guest_announce` the guests' NICs do not offer
        GUEST_ANNOUNCE: QEMU's RARPs (SEND_RARP) and the device's own
        announce them, and a start is over at the device's first RARP.
        With `packed` the NICs run packed virtqueues (QEMU packed=on)."""
        assert host_kind in HOST_KINDS, host_kind
        self.guest_announce = guest_announce
        self.app, self.guest_dir, self.qemu = app, guest_dir, qemu
        self.host_kind, self.pmd = host_kind, pmd
        self.queue_pairs, self.nics, self.legacy, self.packed = queue_pairs, nics, legacy, packed
        self.announce_initial = announce_initial
        self.wd = Workdir("mlx5a-mig-")
        self.workdir = self.wd.path
        self.hugepages = Hugepages(self.wd.file("hugepages"), hugepages) if hugepages else None
        self.host_pages = Hugepages(None, ovs.HUGEPAGES) if host_kind == "ovs" else None
        self.hosts, self.vms = [], []
        # More options of every Vm made from now on (qemu.Vm: dimm_slots,
        # extra_args); a case changes them between its VMs.
        self.vm_options = {}

    def __enter__(self):
        try:
            for pages in (self.hugepages, self.host_pages):
                if pages:
                    pages.__enter__()
        except BaseException:
            self.close()
            self.wd.close()
            raise
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close()
        return self.wd.__exit__(exc_type, exc, tb)

    def host(self, name, vdev_args, interactive=False):
        """A host serving `vdev_args`, device k the port of the guests'
        NIC k: its emulated vport has that NIC's MAC and writes its wire to
        <name>-wire<k>.pcap (host.wire_pcaps). `interactive`: vdpa-testpmd
        at its prompt, taking commands (send())."""
        one = isinstance(vdev_args, str)
        args = [vdev_args] if one else list(vdev_args)
        pcaps = [os.path.join(self.workdir, f"{name}-wire{k}.pcap") for k in range(len(args))]
        args = [a if "emu_mac=" in a else f"{a},emu_mac={mac_of(k)},emu_wire_pcap={pcaps[k]}"
                for k, a in enumerate(args)]
        vdev_args = args[0] if one else args
        eal = hugepage_eal(self.hugepages.mount) if self.hugepages else EAL_MIGRATION
        if self.host_kind == "vdpa-testpmd":
            h = vdpa_testpmd(self.app, self.workdir, name, vdev_args, eal_args=eal,
                             interactive=interactive)
        elif self.host_kind == "dpdk-testpmd":
            h = dpdk_testpmd(self.pmd, self.workdir, name, vdev_args, eal_args=eal)
        else:  # OVS makes its own EAL arguments
            h = ovs.ovs_vswitchd(self.pmd, self.workdir, name, vdev_args)
        h.wire_pcaps = pcaps
        self.hosts.append(h)
        return h

    def _vm(self, host, first_device=0, **kw):
        """A QEMU whose NICs the host devices first_device .. + nics - 1
        serve."""
        sockets = host.sockets[first_device:first_device + self.nics]
        assert len(sockets) == self.nics, f"{host.name} has no devices {first_device}..+{self.nics}"
        vm = Vm(self.guest_dir, self.workdir, f"vm{next(_seq)}", sockets,
                self.queue_pairs, legacy=self.legacy,
                mem_path=self.hugepages.mount if self.hugepages else None, qemu=self.qemu,
                guest_announce=self.guest_announce, first_mac=first_device, packed=self.packed,
                **{**self.vm_options, **kw})
        vm.host = host  # whose devices serve its NICs: for the failure reports
        vm.first_device = first_device
        self.vms.append(vm)
        return vm

    def boot(self, host, page_per_vq=False, first_device=0, wait=True, timeout=180):
        """A guest on `host`'s devices from `first_device`; with `wait`,
        once its network runs (else call booted_on)."""
        vm = self._vm(host, first_device, page_per_vq=page_per_vq)
        if wait:
            self.booted_on(vm, timeout)
        return vm

    def booted_on(self, vm, timeout=180):
        try:
            vm.up_line = booted(vm, timeout)
        except AssertionError as e:
            # A NIC the guest set up short (no MQ, say): the devices' offers
            # and negotiations tell whose view was short.
            raise AssertionError(f"{e}\n" + "\n".join(
                vm.host.report(k) for k in range(vm.first_device, vm.first_device + vm.nics))) from e

    def begin(self, src_vm, dst_host, paused=False, page_per_vq=False, return_path=True,
              max_bandwidth=None, postcopy=False, parameters=None):
        """Starts a migration of src_vm's guest to a new QEMU on dst_host
        (-incoming defer) and returns that QEMU; the migration runs on. With
        `postcopy` both QEMUs are asked for postcopy-ram (the destination
        first, as QEMU checks its backends there). `parameters`: more of the
        source's migrate-set-parameters (downtime-limit, say)."""
        dst_vm = self._vm(dst_host, src_vm.first_device, incoming="defer", paused=paused,
                          page_per_vq=page_per_vq)
        caps = [{"capability": "events", "state": True},
                {"capability": "return-path", "state": return_path}]
        if postcopy:
            caps.append({"capability": "postcopy-ram", "state": True})
        uri = "unix:" + os.path.join(self.workdir, f"migration-{next(_seq)}.sock")
        for vm in (dst_vm, src_vm):
            vm.qmp.cmd("migrate-set-capabilities", capabilities=caps)
            if self.announce_initial is not None:  # the destination announces; both told
                vm.qmp.cmd("migrate-set-parameters", **{"announce-initial": int(self.announce_initial)})
        dst_vm.qmp.cmd("migrate-incoming", uri=uri)
        params = {**({"max-bandwidth": int(max_bandwidth)} if max_bandwidth else {}), **(parameters or {})}
        if params:
            src_vm.qmp.cmd("migrate-set-parameters", **params)
        src_vm.qmp.cmd("migrate", uri=uri)
        return dst_vm

    def migrate(self, src_vm, src_host, dst_host, paused=False, page_per_vq=False,
                return_path=True, max_bandwidth=None, timeout=240, parameters=None):
        """Migrates src_vm's guest to a new QEMU on dst_host. With `paused`
        the destination stays stopped after the migration (-S): its vhost
        device is never started. `max_bandwidth` (bytes/s) stretches the
        pre-copy. Returns the Migration once it completed, the destination
        runs (unless paused) and both ledgers are final: the destination's
        with the guest's announce (its first gratuitous ARP through the
        device, QEMU asking the guest with VIRTIO_NET_F_GUEST_ANNOUNCE).
        `parameters`: more migrate-set-parameters for the source."""
        return self.finish(self.start(src_vm, src_host, dst_host, paused, page_per_vq, return_path,
                                      max_bandwidth, timeout, parameters))

    def start(self, src_vm, src_host, dst_host, paused=False, page_per_vq=False, return_path=True,
              max_bandwidth=None, timeout=240, parameters=None):
        """The first half of migrate(): the migration begun, its Migration
        returned at once (several guests' migrations then run together);
        finish() waits for it."""
        src_mark, dst_mark = src_host.mark(), dst_host.mark()
        devices = range(src_vm.first_device, src_vm.first_device + src_vm.nics)
        dst_before = [dst_host.ledger(k) for k in devices]
        src_before = [src_host.ledger(k) for k in devices]
        dst_vm = self.begin(src_vm, dst_host, paused, page_per_vq, return_path, max_bandwidth,
                            parameters=parameters)
        dst_vm.up_line = src_vm.up_line  # the same guest, booted once
        m = Migration(src_vm, dst_vm, src_host, dst_host, src_mark, dst_mark)
        m.deadline = time.monotonic() + timeout
        m.src_before, m.dst_before, m.paused = src_before, dst_before, paused
        return m

    def finish(self, m):
        """The second half of migrate(): m once it completed and its ledgers
        are final."""
        src_vm, dst_vm, src_host, end = m.src_vm, m.dst_vm, m.src_host, m.deadline
        m.info = until(lambda: src_vm.qmp.cmd("query-migrate"),
                       lambda i: i.get("status") in ("completed", "failed", "cancelled"),
                       max(1, end - time.monotonic()), "end of the migration")
        if m.status != "completed":
            raise AssertionError(f"migration {m.status}: {m.info.get('error-desc', m.info)}; "
                                 "source QEMU:\n" + "\n".join(src_vm.qemu_messages()[-20:]) +
                                 "\ndestination QEMU:\n" + "\n".join(dst_vm.qemu_messages()[-20:]))
        m.src_ledgers = [wait_ledger(src_host, "stop_seq", m.src_before[i], "used_rings_logged_ns", end, k)
                         for i, k in enumerate(m.devices)]
        m.src_ledger = m.src_ledgers[0]
        dst_vm.qmp.wait_event(lambda e: e["event"] == "MIGRATION" and
                              e["data"]["status"] == "completed", max(1, end - time.monotonic()))
        if not m.paused:
            self._wait_started(m, m.dst_before, end)
        m.src_events = list(src_vm.qmp.events)
        m.dst_events = list(dst_vm.qmp.events)
        return m

    def resume(self, m, timeout=240):
        """Runs the destination a migrate(paused=True) left stopped: QEMU
        then starts its vhost devices. Returns once both ledgers are final,
        as migrate() does for a running destination."""
        self.resume_all([m], timeout)

    def resume_all(self, ms, timeout=240):
        """resume() of several paused destinations at once: every `cont`
        sent before any wait."""
        end = time.monotonic() + timeout
        befores = [[m.dst_host.ledger(k) for k in m.devices] for m in ms]
        for m in ms:
            m.dst_vm.qmp.cmd("cont")
        for m, before in zip(ms, befores):
            self._wait_started(m, before, end)
            m.dst_events = list(m.dst_vm.qmp.events)

    def _wait_started(self, m, dst_before, end):
        """The destination VM's RESUME, then every destination device's
        start and the announce in its ledger: the guest's through it, or
        without GUEST_ANNOUNCE the device's own."""
        m.dst_vm.qmp.wait_event(lambda e: e["event"] == "RESUME", max(1, end - time.monotonic()))
        phase = "announced_ns" if self.guest_announce else "device_announced_ns"
        try:
            # A guest whose kernel panicked (or whose QEMU quit) announces
            # nothing: no use waiting.
            alive = lambda: m.dst_host.alive() and m.dst_vm.alive() and not m.dst_vm.kernel_panicked()
            for i, k in enumerate(m.devices):
                wait_ledger(m.dst_host, "start_seq", dst_before[i], "all_ready_ns", end, k)
            m.dst_ledgers = [wait_ledger(m.dst_host, "start_seq", dst_before[i], phase, end, k, alive)
                             for i, k in enumerate(m.devices)]
        except AssertionError as e:
            # A guest that never announces may have died or stopped on the
            # destination: where its vCPUs are tells which.
            raise AssertionError(f"{e}\ndestination guest {m.dst_vm.name} "
                                 f"{m.dst_vm.failure_context()}\n{m.handover_report()}") from e
        m.dst_ledger = m.dst_ledgers[0]

    def close(self):
        """Ends every process and gives the hugepages back."""
        for vm in self.vms:
            vm.kill()
        for h in self.hosts:
            h.kill()
        for pages in (self.hugepages, self.host_pages):
            if pages:
                pages.close()


def wait_ledger(host, seq_key, before, phase_key, end, device=0, alive=None):
    """The host device's ledger once it recorded one more stop or start than
    `before` and reached `phase_key`, by the monotonic time `end`; `alive`
    (the host's by default) ends the wait early when it turns false."""
    return until(lambda: host.ledger(device), lambda l: l[seq_key] > before[seq_key] and l[phase_key],
                 max(1, end - time.monotonic()),
                 f"{host.name}: a new {seq_key} with {phase_key} in the ledger", alive=alive or host.alive)
