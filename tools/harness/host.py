"""Host: a DPDK process serving mlx5async devices on vhost-user sockets,
read through its output and DPDK's telemetry (the PMD's /vdpa_mlx5async/*
endpoints). These programs serve: vdpa-testpmd (vdpa_testpmd(): the app, as
a migration host or ./run demo runs it), tests/e2e/vdpa_host (vdpa_host():
a test host that also answers commands, cmd()), Debian's unmodified
dpdk-testpmd (dpdk_testpmd()) and OVS-DPDK (ovs.ovs_vswitchd()), in which
the driver serves each device on a socket of its own (devarg
vhost_socket)."""
import json
import os
import re

from .proc import Proc, Workdir, unique
from .telemetry import Telemetry

def eal(mem_mb):
    """EAL without hugepages or PCI devices: the emulated device needs neither."""
    return ["--no-huge", "-m", str(mem_mb), "--no-pci"]


def hugepage_eal(mount, mb=256):
    """EAL on hugepages of `mount` (a hugetlbfs), `mb` of them at start,
    unlinked once mapped (freed when the process ends)."""
    return ["--huge-dir", mount, "--huge-unlink", "-m", str(mb), "--no-pci"]


PMD_LOG = ["--log-level", "pmd.vdpa.mlx5async:info"]
# vhost's info lines name the ring bases on the wire (GET_VRING_BASE /
# SET_VRING_BASE), which the migration checks read.
VHOST_LOG = ["--log-level", "lib.vhost.config:info"]
# The EAL-level tests' processes (hosts and frontends).
EAL_COMMON = eal(256) + PMD_LOG
# A migration host's: room for a guest's rings and buffers.
EAL_MIGRATION = eal(512)

# vhost (lib/vhost/vhost_user.c): the GET_VRING_BASE answer, and the base a
# SET_VRING_BASE stored; its lines name the socket: "VHOST_CONFIG: (path) ...".
GET_BASE = re.compile(r"(?:\((\S+)\) )?vring base idx:(\d+) file:(\d+)")
SET_BASE = re.compile(r"(?:\((\S+)\) )?vring base idx:(\d+) last_used_idx:(\d+) last_avail_idx:(\d+)")
# Lines that mean something went wrong: the PMD's own warnings and errors,
# and vhost's failures (its lines carry no level).
_BAD = re.compile(r"mlx5async: (error|warning):|fail|error|invalid|mismatch", re.IGNORECASE)


class Host(Proc):
    """Serves device k (`devices[k]`, vdpa_mlx5async<k>) on `sockets[k]`.
    The single-device reads (ledger(), vqs() ...) are device 0's unless a
    device is named."""

    def __init__(self, argv, name, prefix, sockets, devices, log_path=None, env=None, stdin=False):
        super().__init__(argv, name, log_path=log_path, env=env, stdin=stdin)
        self.prefix = prefix
        self.sockets, self.devices = list(sockets), list(devices)
        self.socket, self.device = self.sockets[0], self.devices[0]
        self.telemetry = Telemetry(prefix)

    def cmd(self, text, timeout=60):
        """tests/e2e/vdpa_host only: one command, its one-line JSON answer."""
        self.send(text)
        return json.loads(self.read_until(lambda l: l.startswith("{"), timeout, f"answer to '{text}'"))

    def bad_lines(self, since=0, allowed=()):
        """Error and warning lines after `since`, except those matching one
        of the `allowed` patterns (expected ones, said where they are used)."""
        return [l for l in self.output()[since:]
                if _BAD.search(l) and not any(re.search(a, l) for a in allowed)]

    def _bases(self, pattern, since, device):
        """Matches of a vhost ring-base line of device `device` after `since`
        (a line that names no socket counts for every device)."""
        for line in self.output()[since:]:
            m = pattern.search(line)
            if m and (m.group(1) is None or m.group(1) == self.sockets[device]):
                yield m

    def get_bases(self, since=0, device=0):
        """ring -> base vhost answered GET_VRING_BASE with (the last one)."""
        return {int(m.group(2)): int(m.group(3)) for m in self._bases(GET_BASE, since, device)}

    def set_bases(self, since=0, device=0):
        """ring -> (last_avail_idx, last_used_idx) vhost stored at SET_VRING_BASE."""
        return {int(m.group(2)): (int(m.group(4)), int(m.group(3)))
                for m in self._bases(SET_BASE, since, device)}

    def vqs(self, device=0):
        """Per virtq with an object: {index: {state, hw_available_index, ...}},
        RDY ones queried live from the device."""
        t = self.telemetry.query(f"/vdpa_mlx5async/vqs,{self.devices[device]}")
        keys = [k for k in t if isinstance(t[k], list)]
        return {t["index"][i]: {k: t[k][i] for k in keys} for i in range(len(t["index"]))}

    def ledger(self, device=0):
        return self.telemetry.query(f"/vdpa_mlx5async/ledger,{self.devices[device]}")

    def info(self, device=0):
        return self.telemetry.query(f"/vdpa_mlx5async/info,{self.devices[device]}")

    def latency(self, device=0):
        """The device's firmware commands since probe by type
        (/vdpa_mlx5async/latency): {type: {count, sum_ns, max_ns, p50_ns,
        p99_ns, timed_out}}."""
        t = self.telemetry.query(f"/vdpa_mlx5async/latency,{self.devices[device]}")
        cols = ("count", "sum_ns", "max_ns", "p50_ns", "p99_ns", "timed_out")
        return {ty: {c: t[c][i] for c in cols} for i, ty in enumerate(t["type"])}

    def announce(self, device=0):
        """The device's own announce and what it sent to the network
        (/vdpa_mlx5async/announce)."""
        return self.telemetry.query(f"/vdpa_mlx5async/announce,{self.devices[device]}")

    def emu_objects(self, device=0):
        """The objects device `device`'s emulated ConnectX holds, the
        firmware's view ({pds, uars, umems, mkeys, counters, virtqs, cqs,
        qps, sqs}: vdpa-testpmd's /vdpa_testpmd/emu_objects)."""
        return self.telemetry.query(f"/vdpa_testpmd/emu_objects,{self.devices[device]}")

    def report(self, device=0):
        """One line of what device `device` says, for a failure report: the
        features it offered and negotiated, its interrupt relay's counters,
        each virtq's (state, avail, used, interrupts). The guest's counters
        alone cannot tell a short negotiation, a lost interrupt and a stalled
        ring apart."""
        try:
            i = self.info(device)
            irq = {k: v for k, v in i.items() if k.startswith("irq_")}
            vqs = {n: (v["state"], v["hw_available_index"], v["hw_used_index"], v["interrupts"])
                   for n, v in self.vqs(device).items()}
            return (f"host {self.name} device {device}: offered {i['features']:#x}, negotiated "
                    f"{i['negotiated_features']:#x}, {irq}; virtqs (state, avail, used, interrupts): {vqs}")
        except Exception as e:  # the report must not hide the failure it reports
            return f"host {self.name} device {device}: no telemetry ({e})"

    def stop(self, timeout=60):
        """SIGTERM: the app closes its sockets and exits (0 when nothing failed)."""
        return self.terminate(timeout)


def _started(host, wait):
    """`host` once wait(host) returned; killed if it did not."""
    try:
        wait(host)
    except BaseException:
        host.kill()
        raise
    return host


def vdpa_testpmd(app, workdir, name, vdev, extra_eal=(), eal_args=EAL_MIGRATION, interactive=False):
    """vdpa-testpmd serving `vdev` (one, or a list: a device each,
    vdpa_mlx5async0, 1 ...) in server mode; device k's socket is
    `<workdir>/<name>-vhostK`, its output `<workdir>/<name>-host.log`;
    `interactive`: at its prompt, taking commands (send()). Returns once
    every socket is attached."""
    iface = os.path.join(workdir, f"{name}-vhost")
    vdevs = [vdev] if isinstance(vdev, str) else list(vdev)
    prefix = unique(f"mlx5a-{name}")
    argv = [app] + list(eal_args) + ["--file-prefix", prefix] + \
        [a for v in vdevs for a in ("--vdev", v)] + PMD_LOG + VHOST_LOG + \
        list(extra_eal) + ["--", "--iface", iface, "--auto-start"] + (["-i"] if interactive else [])
    sockets = [iface + str(k) for k in range(len(vdevs))]
    host = Host(argv, name, prefix, sockets, [v.split(",")[0] for v in vdevs],
                log_path=os.path.join(workdir, f"{name}-host.log"), stdin=interactive)

    def attached(h):
        for k, sock in enumerate(sockets):
            h.wait_line(lambda l: f": attached to {sock} " in l, 60, f"socket {k} attached")
    return _started(host, attached)


def with_socket(vdev, socket):
    """`vdev` served by the driver itself on `socket` (devarg vhost_socket,
    server mode): for applications that attach no vDPA device."""
    return f"{vdev},vhost_socket={socket}"


def served(sockets, timeout=60):
    """A wait for the PMD's line for each socket it serves itself."""
    def wait(h):
        for k, sock in enumerate(sockets):
            h.wait_line(lambda l: f"serves vhost-user socket {sock} " in l, timeout, f"socket {k} served")
    return wait


def dpdk_testpmd(pmd, workdir, name, vdev, eal_args=EAL_MIGRATION):
    """Debian's dpdk-testpmd, unmodified, loading the PMD (`pmd`, with -d) and
    probing `vdev` (one, or a list: a device each): the driver serves device
    k on `<workdir>/<name>-vhostK` itself (devarg vhost_socket). testpmd has
    no port, forwards nothing and waits at its prompt; SIGTERM ends it
    (rte_eal_cleanup: the driver's remove unregisters the sockets). Output
    in `<workdir>/<name>-host.log`. Returns once every socket is served."""
    vdevs = [vdev] if isinstance(vdev, str) else list(vdev)
    sockets = [os.path.join(workdir, f"{name}-vhost{k}") for k in range(len(vdevs))]
    prefix = unique(f"mlx5a-{name}")
    # stdbuf: testpmd block-buffers stdout into a file. --total-num-mbufs:
    # its default pool does not fit the EAL memory of a --no-huge host.
    # --no-mlockall: nothing of testpmd's runs a datapath, and locking would
    # fault in every guest page vhost maps.
    argv = ["stdbuf", "-oL", "dpdk-testpmd"] + list(eal_args) + ["--file-prefix", prefix, "-d", pmd] + \
        [a for v, sock in zip(vdevs, sockets) for a in ("--vdev", with_socket(v, sock))] + \
        PMD_LOG + VHOST_LOG + ["--", "-i", "--total-num-mbufs=2048", "--no-mlockall"]
    host = Host(argv, name, prefix, sockets, [v.split(",")[0] for v in vdevs],
                log_path=os.path.join(workdir, f"{name}-host.log"), stdin=True)
    return _started(host, served(sockets))


def vdpa_host(binary, vdev, socket, prefix=None, extra_eal=(), env=None, log_path=None):
    """tests/e2e/vdpa_host serving `vdev` on `socket`, once it says ready."""
    prefix = prefix or unique("host")
    argv = [binary] + EAL_COMMON + ["--file-prefix", prefix, "--vdev", vdev] + \
        list(extra_eal) + ["--", "--socket", socket]
    host = Host(argv, "vdpa_host", prefix, [socket], [vdev.split(",")[0]], log_path=log_path,
                env=env, stdin=True)
    return _started(host, lambda h: h.read_until(lambda l: l.startswith('{"ready"'), 60, "ready"))


class HostSession:
    """A vdpa_host serving `vdev` on a socket in a private folder. Leaving
    the `with` block kills the processes given to track() (frontends),
    quits the host and removes the folder, whatever happened."""

    def __init__(self, binary, vdev, prefix=None, env=None, extra_eal=()):
        self.wd = Workdir("mlx5a-e2e-")
        self.sock = self.wd.file("vhost.sock")
        self.prefix = prefix or unique("host")
        self._tracked = []
        try:
            self.host = vdpa_host(binary, vdev, self.sock, self.prefix, extra_eal=extra_eal, env=env,
                                  log_path=self.wd.file("host.log"))
        except BaseException:
            self.wd.close()
            raise

    def track(self, proc):
        self._tracked.append(proc)
        return proc

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for p in self._tracked:
            p.kill()
        try:
            self.host.send("quit")
            self.host.wait(60)
        except (OSError, ValueError):  # the host is gone: its stdin broke or was closed
            pass
        self.host.kill()
        self.wd.close()
        return False


def thread_cpus(pid):
    """{thread name: set of allowed CPUs} of a process's threads (the last
    thread of a name wins)."""
    out = {}
    task = f"/proc/{pid}/task"
    for tid in os.listdir(task):
        try:
            with open(f"{task}/{tid}/comm") as f:
                name = f.read().strip()
            out[name] = os.sched_getaffinity(int(tid))
        except (FileNotFoundError, ProcessLookupError):
            pass  # the thread ended meanwhile
    return out
