"""A QEMU guest for live-migration runs: Debian's qemu-system-x86_64 (TCG)
booting the guest tools/guest/build makes, its virtio-net devices on
vhost-user sockets, driven over QMP."""
import json
import os
import re
import socket
import time

from .proc import LogFile, Proc
from .wait import until

QEMU = "qemu-system-x86_64"
GUEST_MAC = "52:54:00:12:34:56"  # eth0's; ethK's is mac_of(K)
DIMM_MB = 128  # a hot-plugged DIMM (memory blocks are 128 MiB on x86)
MEM_MB = 256
# QEMU 7.2 under TCG loses guest stores in a migration when a RAM block's
# length is a whole number of dirty-bitmap words (64 pages: 256 KiB): that
# sync path clears the block's dirty bits without resetting the vCPU's TLB
# entries, so later stores through them set no bit and their page's last
# copy is never sent (fixed in QEMU 9.0 by 03bfc2188f, "physmem: Fix
# migration dirty bitmap coherency with TCG memory access"; Debian 12's
# 7.2.22 lacks it). The guest's RAM is MEM_MB and one 8 KiB step more (QEMU
# rounds RAM to 8 KiB), for which QEMU syncs page by page, resetting them.
# A hot-plugged DIMM has a whole number of words (the guest takes only
# whole 128 MiB blocks): its pages stay exposed. MLX5ASYNC_GUEST_RAM_TAIL=0
# brings the loss back (e2e-migration-cpu-stores then fails).
RAM_TAIL = int(os.environ.get("MLX5ASYNC_GUEST_RAM_TAIL", 8 << 10))
MEM_BYTES = (MEM_MB << 20) + RAM_TAIL
# virtio-net's host_mtu: QEMU offers VIRTIO_NET_F_MTU (when the backend does)
# and sends it to the backend (VHOST_USER_NET_SET_MTU).
MTU = 1500

def mac_of(nic):
    return GUEST_MAC[:-2] + f"{0x56 + nic:02x}"


# What the guest's init prints once a second per NIC (tools/guest/init):
# mlx5a-stats for eth0, mlx5a-statsK for ethK.
def _stats_re(nic):
    return re.compile(r"^mlx5a-stats" + (str(nic) if nic else "") +
                      r" up=([0-9.]+) rxq=(\S*) txq=(\S*)(?: irq=(\d+))?")


class QmpError(RuntimeError):
    pass


class Qmp:
    """One QMP connection: commands in order, events kept with their
    timestamps (QEMU's wall clock, as time.time())."""

    def __init__(self, path, timeout=30):
        def attempt():
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(path)
                return s
            except OSError:  # QEMU has not made it yet
                s.close()
                return None
        self.sock = until(attempt, lambda s: s is not None, timeout, f"QMP socket at {path}")
        self.sock.settimeout(timeout)
        self.f = self.sock.makefile("rw", encoding="utf-8")
        self.events = []
        greeting = self._read()
        if "QMP" not in greeting:
            raise QmpError(f"not a QMP greeting: {greeting}")
        self.cmd("qmp_capabilities")

    def _read(self):
        line = self.f.readline()
        if not line:
            raise QmpError("QMP connection closed")
        return json.loads(line)

    def cmd(self, name, **args):
        msg = {"execute": name}
        if args:
            msg["arguments"] = args
        self.f.write(json.dumps(msg) + "\n")
        self.f.flush()
        while True:
            r = self._read()
            if "event" in r:
                self._keep(r)
                continue
            if "error" in r:
                raise QmpError(f"{name}: {r['error'].get('desc', r['error'])}")
            return r.get("return")

    def _keep(self, r):
        ts = r.get("timestamp", {})
        r["time"] = ts.get("seconds", 0) + ts.get("microseconds", 0) / 1e6
        self.events.append(r)

    def wait_event(self, pred, timeout):
        """The first kept or arriving event for which pred(event) holds."""
        end = time.monotonic() + timeout
        seen = 0
        while True:
            for e in self.events[seen:]:
                if pred(e):
                    return e
            seen = len(self.events)
            left = end - time.monotonic()
            if left <= 0:
                raise QmpError(f"no such QMP event within {timeout}s; got "
                               f"{[e['event'] for e in self.events][-20:]}")
            self.sock.settimeout(left)
            try:
                self._keep(self._read())
            except socket.timeout:
                pass
            finally:
                self.sock.settimeout(None)

    def close(self):
        try:
            self.f.close()
            self.sock.close()
        except OSError:
            pass


class Vm(Proc):
    """One QEMU process. Console and QEMU's own messages go to files in
    `workdir` under `name`; QMP is a unix socket there."""

    def __init__(self, guest_dir, workdir, name, vhost_sockets, queue_pairs, incoming=None,
                 paused=False, page_per_vq=False, legacy=False, mem_path=None,
                 qemu=QEMU, guest_announce=True, dimm_slots=0, extra_args=(), first_mac=0,
                 packed=False, guest_args=()):
        """A virtio-net NIC on each of `vhost_sockets` (a path, or a list:
        eth0, eth1 ...), each with `queue_pairs`. `legacy`: legacy-only
        virtio-net (no VERSION_1: the guest driver then negotiates
        ANY_LAYOUT). `mem_path`: the guest's RAM in a file there (a
        hugetlbfs mount: hugepages), else a memfd. Without `guest_announce`
        the NICs do not offer VIRTIO_NET_F_GUEST_ANNOUNCE: QEMU announces a
        migrated guest with RARPs, through the backend (SEND_RARP).
        `dimm_slots`: room for that many memory DIMMs of up to DIMM_MB each
        to be hot-plugged (the guest onlines them); `extra_args`: more of
        QEMU's command line (the destination's DIMMs). NIC k has the MAC
        mac_of(first_mac + k): that of the host device that serves it.
        `packed`: the NICs offer packed virtqueues (RING_PACKED), which
        the guest's driver then takes. `guest_args`: more of the guest
        kernel's command line (tools/guest/init's mlx5a.* options)."""
        self.name = name
        self.console_path = os.path.join(workdir, f"{name}-console.log")
        self.qmp_path = os.path.join(workdir, f"{name}-qmp.sock")
        self.queue_pairs = queue_pairs
        self.packed = packed
        sockets = [vhost_sockets] if isinstance(vhost_sockets, str) else list(vhost_sockets)
        self.nics = len(sockets)
        nic_args = []
        for k, path in enumerate(sockets):
            nic = (f"virtio-net-pci,netdev=n{k},mac={mac_of(first_mac + k)},vectors=0"  # MSI-X over vhost-user crashes TCG here
                   + f",host_mtu={MTU}"
                   + (",mq=on" if queue_pairs > 1 else "")
                   + (",page-per-vq=on" if page_per_vq else "")
                   + ("" if guest_announce else ",guest_announce=off")
                   + (",packed=on" if packed else "")
                   + (",disable-modern=on,disable-legacy=off" if legacy else ""))
            nic_args += ["-chardev", f"socket,id=vu{k},path={path}",
                         "-netdev", f"vhost-user,id=n{k},chardev=vu{k},queues={queue_pairs}",
                         "-device", nic]
        # vhost-user needs the guest's RAM shared with the backend.
        ram_kb = MEM_BYTES >> 10
        mem = (f"memory-backend-file,id=mem,size={ram_kb}K,mem-path={mem_path},share=on" if mem_path
               else f"memory-backend-memfd,id=mem,size={ram_kb}K,share=on")
        size = f"{ram_kb}K" + (f",slots={dimm_slots},maxmem={ram_kb + dimm_slots * (DIMM_MB << 10)}K"
                               if dimm_slots else "")
        append = f"console=ttyS0 quiet panic=-1 mlx5a.qp={queue_pairs} mlx5a.nics={self.nics}" + \
            (" memhp_default_state=online_movable" if dimm_slots else "") + \
            "".join(" " + x for x in guest_args)
        argv = [qemu, "-machine", "pc,accel=tcg", "-smp", "1", "-m", size,
                "-object", mem,
                "-numa", "node,memdev=mem",
                "-kernel", os.path.join(guest_dir, "vmlinuz"),
                "-initrd", os.path.join(guest_dir, "initrd.gz"),
                "-append", append,
                ] + nic_args + list(extra_args) + [
                "-nodefaults", "-display", "none", "-no-reboot",
                "-serial", f"file:{self.console_path}",
                "-qmp", f"unix:{self.qmp_path},server=on,wait=off"]
        if paused:
            argv.append("-S")
        if incoming:
            argv += ["-incoming", incoming]
        super().__init__(argv, name, log_path=os.path.join(workdir, f"{name}-qemu.log"))
        self._console = LogFile(self.console_path)
        self._qmp = None

    @property
    def qmp(self):
        if self._qmp is None:
            self._qmp = Qmp(self.qmp_path)
        return self._qmp

    def console(self):
        """Complete lines of the console so far (a line still being written
        is left for the next read)."""
        return self._console.lines()

    def kernel_panicked(self):
        """Whether the guest kernel said it panics (panic=-1 reboots it)."""
        return any("Kernel panic" in l for l in self.console())

    def qemu_messages(self):
        return self.output()

    def failure_context(self):
        """Whether QEMU runs, the console's and QEMU's last lines, and where
        the vCPUs are: for failure reports."""
        return (f"(QEMU {'running' if self.alive() else 'exited'}); console:\n" +
                "\n".join(self.console()[-30:]) + "\nQEMU:\n" + "\n".join(self.qemu_messages()[-20:]) +
                self._vcpu_report())

    def _vcpu_report(self):
        """The run state and where the vCPUs are, sampled twice a second
        apart: a guest that is halted or stuck at one instruction, told from
        one that runs and prints nothing; then CPU 0's APIC timer and
        pending interrupts. For failure reports only: a
        monitor that does not answer within 5 s is reported as such."""
        if not self.alive():
            return ""
        q = self.qmp
        q.sock.settimeout(5)
        try:
            status = q.cmd("query-status").get("status")
            def cpus():  # TCG's "info cpus" has no pc: the registers' RIP (EIP) and HLT
                regs = q.cmd("human-monitor-command", **{"command-line": "info registers"})
                return " ".join(re.findall(r"\b(?:RIP|EIP|HLT)=\S+", regs))
            first, t0 = cpus(), time.monotonic()
            until(time.monotonic, lambda t: t - t0 >= 1, 5, "a second to pass")
            later = cpus()
            # A halted guest that never wakes: is its timer armed, an
            # interrupt pending (IRR) or in service (ISR)?
            lapic = q.cmd("human-monitor-command", **{"command-line": "info lapic"})
            timer = "\n".join(l for l in lapic.splitlines() if re.match(r"(LVTT|Timer|ISR|IRR)\b", l))
            return (f"\nQEMU run state: {status}\nvCPUs: {first}\nvCPUs 1 s later: {later}"
                    f"\nCPU 0's local APIC:\n{timer}")
        except (QmpError, OSError, AssertionError) as e:
            return f"\nQEMU monitor: no answer ({e})"
        finally:
            q.sock.settimeout(None)

    def stats(self, nic=0):
        """Every counters line of NIC `nic` so far: (uptime, {queue: rx},
        {queue: tx}, interrupts the guest took for the NIC or None)."""
        out = []
        pat = _stats_re(nic)
        for line in self.console():
            m = pat.match(line)
            if not m:
                continue
            def parse(s):
                return {int(k): int(v) for k, v in (kv.split(":") for kv in s.split(",") if kv)}
            irq = int(m.group(4)) if m.group(4) else None
            out.append((float(m.group(1)), parse(m.group(2)), parse(m.group(3)), irq))
        return out

    def wait_console(self, pred, timeout, what):
        return until(lambda: next((l for l in self.console() if pred(l)), None), lambda l: l is not None,
                     timeout, f"{self.name} console line: {what}", alive=self.alive,
                     describe=lambda _: self.failure_context())

    def wait_stats(self, after, count, timeout, nic=0):
        """`count` counters lines of NIC `nic` beyond the first `after`;
        returns them all."""
        return until(lambda: self.stats(nic), lambda s: len(s) >= after + count, timeout,
                     f"{self.name} eth{nic}: {count} counters lines after the first {after}",
                     alive=self.alive, describe=lambda s: f"{len(s)} lines " + self.failure_context())

    def kill(self):
        if self._qmp:
            self._qmp.close()
            self._qmp = None
        super().kill()
        self._console.close()


def guest_features(line):
    """The virtio features the guest's driver negotiated, from its 'up' line
    (the bit string of /sys/class/net/eth0/device/features, bit 0 first)."""
    m = re.search(r"features=([01]+)", line)
    if not m:
        raise AssertionError(f"no features in the guest's line: {line}")
    return sum(1 << i for i, c in enumerate(m.group(1)) if c == "1")


def booted(vm, timeout=180):
    """Waits for the guest's networking: every NIC up with its queue pairs,
    and two counters lines of each. Returns eth0's 'up' line."""
    lines = []
    for k in range(vm.nics):
        tag = "mlx5a-guest" + (str(k) if k else "") + ":"
        line = vm.wait_console(lambda l: l.startswith(tag) or l.startswith("mlx5a-guest: error"),
                               timeout, f"guest init of eth{k}")
        if "error" in line:
            raise AssertionError(f"{vm.name}: {line}")
        want = f"combined={vm.queue_pairs}"
        if want not in line:
            raise AssertionError(f"{vm.name}: eth{k} has not {want}: {line}")
        lines.append(line)
    for k in range(vm.nics):
        vm.wait_stats(0, 2, timeout, nic=k)
    return lines[0]
