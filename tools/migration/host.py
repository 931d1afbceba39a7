"""A migration host: vdpa-testpmd serving one mlx5async device on a
vhost-user socket (server mode), read through its log and DPDK's telemetry
socket (the PMD's /vdpa_mlx5async/* endpoints). Standard library only."""
import itertools
import json
import os
import re
import socket
import time

from child import Child

EAL = ["--no-huge", "-m", "512", "--no-pci"]


def hugepage_eal(mount, mb=256):
    """EAL on hugepages of `mount` (a hugetlbfs), `mb` of them at start,
    unlinked once mapped (freed when the process ends)."""
    return ["--huge-dir", mount, "--huge-unlink", "-m", str(mb), "--no-pci"]
# Levels the checks read: the PMD's info lines, and vhost's, which name the
# ring bases on the wire (GET_VRING_BASE / SET_VRING_BASE).
LOG_LEVELS = ["--log-level", "pmd.vdpa.mlx5async:info", "--log-level", "lib.vhost.config:info"]

_seq = itertools.count()

# vhost (lib/vhost/vhost_user.c): the GET_VRING_BASE answer, and the base a
# SET_VRING_BASE stored; its lines name the socket: "VHOST_CONFIG: (path) ...".
GET_BASE = re.compile(r"(?:\((\S+)\) )?vring base idx:(\d+) file:(\d+)")
SET_BASE = re.compile(r"(?:\((\S+)\) )?vring base idx:(\d+) last_used_idx:(\d+) last_avail_idx:(\d+)")
# Lines that mean something went wrong: the PMD's own warnings and errors,
# and vhost's failures (its lines carry no level).
_BAD = re.compile(r"mlx5async: (error|warning):|fail|error|invalid|mismatch", re.IGNORECASE)


class Telemetry:
    """DPDK's telemetry v2 socket of one EAL process."""

    def __init__(self, prefix):
        self.path = f"/var/run/dpdk/{prefix}/dpdk_telemetry.v2"

    def query(self, cmd, timeout=30):
        end = time.monotonic() + timeout
        while True:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            try:
                s.settimeout(timeout)
                s.connect(self.path)
                hello = json.loads(s.recv(65536))
                s.send(cmd.encode())
                reply = b""
                while True:  # one message, unless it was longer than max_output_len
                    chunk = s.recv(hello.get("max_output_len", 16384) + 1)
                    reply += chunk
                    try:
                        return json.loads(reply)[cmd.split(",")[0]]
                    except ValueError:
                        if not chunk:
                            raise
            except (FileNotFoundError, ConnectionRefusedError):
                if time.monotonic() > end:
                    raise AssertionError(f"no telemetry socket {self.path}")
                time.sleep(0.1)
            finally:
                s.close()


class Host(Child):
    """vdpa-testpmd with `vdev` (one, or a list: a device each,
    vdpa_mlx5async0, 1 ...); device K's socket is `<workdir>/<name>-vhostK`.
    The single-device reads (ledger(), vqs() ...) are device 0's unless a
    device is named."""

    def __init__(self, app, workdir, name, vdev, extra_eal=(), eal=EAL):
        self.name = name
        self.prefix = f"mlx5a-mig-{os.getpid()}-{next(_seq)}-{name}"
        iface = os.path.join(workdir, f"{name}-vhost")
        vdevs = [vdev] if isinstance(vdev, str) else list(vdev)
        self.sockets = [iface + str(k) for k in range(len(vdevs))]
        self.socket = self.sockets[0]
        self.devices = [v.split(",")[0] for v in vdevs]
        self.device = self.devices[0]
        argv = [app] + list(eal) + ["--file-prefix", self.prefix] + \
            [a for v in vdevs for a in ("--vdev", v)] + LOG_LEVELS + \
            list(extra_eal) + ["--", "--iface", iface, "--auto-start"]
        super().__init__(argv, os.path.join(workdir, f"{name}-host.log"), f"{name}: vdpa-testpmd")
        self.telemetry = Telemetry(self.prefix)
        for k in range(len(vdevs)):
            self.wait_line(lambda l: f": attached to {self.sockets[k]} " in l, 60, f"socket {k} attached")

    def lines(self):
        with open(self.log_path, errors="replace") as f:
            return f.read().splitlines()

    def mark(self):
        """Position in the log; later checks read only what follows it."""
        return len(self.lines())

    def wait_line(self, pred, timeout, what, since=0):
        end = time.monotonic() + timeout
        while True:
            lines = self.lines()
            for line in lines[since:]:
                if pred(line):
                    return line
            if self.p.poll() is not None or time.monotonic() > end:
                raise AssertionError(f"{self.name}: no log line: {what} within {timeout}s "
                                     f"(host {'running' if self.p.poll() is None else 'exited'}); "
                                     "log:\n" + "\n".join(lines[-40:]))
            time.sleep(0.05)

    def bad_lines(self, since=0, allowed=()):
        """Error and warning lines after `since`, except those matching one
        of the `allowed` patterns (expected ones, said where they are used)."""
        out = []
        for line in self.lines()[since:]:
            if _BAD.search(line) and not any(re.search(a, line) for a in allowed):
                out.append(line)
        return out

    def _socket_of(self, m, k):
        """Whether a vhost line's socket (group 1, when named) is device k's."""
        return m.group(1) is None or m.group(1) == self.sockets[k]

    def get_bases(self, since=0, device=0):
        """ring -> base vhost answered GET_VRING_BASE with (the last one)."""
        return {int(m.group(2)): int(m.group(3))
                for m in (GET_BASE.search(l) for l in self.lines()[since:]) if m and self._socket_of(m, device)}

    def set_bases(self, since=0, device=0):
        """ring -> (last_avail_idx, last_used_idx) vhost stored at SET_VRING_BASE."""
        return {int(m.group(2)): (int(m.group(4)), int(m.group(3)))
                for m in (SET_BASE.search(l) for l in self.lines()[since:]) if m and self._socket_of(m, device)}

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
