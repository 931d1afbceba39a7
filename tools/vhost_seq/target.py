"""The host under test: vdpa-testpmd serving an emulated ConnectX-7 on one
vhost-user socket, and the checks made after each connection: alive,
answering (a vhost-user probe and telemetry) within a deadline, its fds
and memory back near where they started."""
import re
import signal
import subprocess
import struct

from harness import vhost_user as vu
from harness.frontend import Frontend
from harness.host import EAL_COMMON, Host
from harness.proc import fd_targets, unique
from harness.wait import DEADLINE_S, until

from .send import TAG

QP = 2  # queue pairs of the device and of the final frontend
FAST = "emu_modify_us=20,emu_query_us=30,emu_create_us=20,emu_destroy_us=20,emu_umem_us=5"
VDEV = f"vdpa_mlx5async0,emu=cx7,queues={QP},queue_size=256,{FAST}"
# A live host answers in milliseconds; this is the bound that calls it
# wedged, generous for a loaded 2-core machine.
ANSWER_S = 30
# fds the host may hold above its count at start once a connection is gone:
# ones opened once, at the first connection (the emulator's, vhost's).
FD_SLACK = 4
RSS_SLACK_KB = 64 << 10


class Target:
    def __init__(self, app, wd):
        prefix = unique("fuzzseq")
        self.sock = wd.file("vhost0")
        argv = [app] + EAL_COMMON + ["--file-prefix", prefix, "--vdev", VDEV, "--",
                                     "--iface", wd.file("vhost"), "--auto-start", "-i"]
        self.host = Host(argv, "vdpa-testpmd", prefix, [self.sock], ["vdpa_mlx5async0"],
                         log_path=wd.file("host.log"), stdin=True)
        self.wd = wd
        self.probes = 0
        self.vhost_kept = set()  # fd numbers vhost keeps (gen.vring_fds)
        try:
            self.host.wait_line(lambda l: f": attached to {self.sock} " in l, DEADLINE_S, "socket attached")
            self.answers()
            self.base_fds, self.base_rss = len(fd_targets(self.host.pid)), self.rss_kb()
        except BaseException:
            self.host.kill()
            raise

    def held_fds(self, fds):
        """Of the host's fds (`fds`, from fd_targets), those of the memfds
        and files sent to it, but those vhost is known to keep (vhost_kept)."""
        return {n: t for n, t in fds.items() if TAG in t and n not in self.vhost_kept}

    def held_maps(self):
        with open(f"/proc/{self.host.pid}/maps") as f:
            return [l.split(None, 5)[-1].strip() for l in f if TAG in l]

    def rss_kb(self):
        with open(f"/proc/{self.host.pid}/status") as f:
            return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))

    def answers(self):
        """A vhost-user probe (GET_FEATURES on a new connection: the vhost
        thread runs) and a telemetry query (the PMD answers), each within
        ANSWER_S."""
        rc = self.host.p.poll()
        assert rc is None, f"the host died ({signal.Signals(-rc).name if rc < 0 else f'exit {rc}'})"
        c = vu.Conn(self.sock, ANSWER_S)
        try:
            features = struct.unpack("<Q", c.request(vu.REQ["GET_FEATURES"]))[0]
        finally:
            c.close()
        self.probes += 1
        assert features >> vu.F_PROTOCOL_FEATURES & 1, f"GET_FEATURES answered {features:#x}"
        info = self.host.telemetry.query("/vdpa_mlx5async/info,vdpa_mlx5async0", ANSWER_S)
        assert isinstance(info, dict), f"telemetry info answered {info!r}"

    def check(self, since=0, vring_fds=0):
        """After a connection closed: alive and answering; the fds and
        mappings it was sent released, its fd count and RSS near the start.
        The one exception: when vhost refused a ring index since `since`
        ("failed to alloc queue"), it may keep up to the `vring_fds` fds
        sent with ring requests (gen.vring_fds); those are counted, and
        nothing else may stay."""
        try:
            self.answers()
        except (OSError, ValueError) as e:  # refused, reset, timed out, cut short
            try:  # a dying host closes its sockets before it can be reaped
                rc = self.host.p.wait(5)
            except subprocess.TimeoutExpired:
                rc = None
            died = f"; the host died ({signal.Signals(-rc).name if rc < 0 else f'exit {rc}'})" if rc is not None else ""
            raise AssertionError(f"the host does not answer: {e!r}{died}") from e

        now = fd_targets(self.host.pid)  # a kept fd closed since is no longer kept
        self.vhost_kept = {n for n in self.vhost_kept if TAG in now.get(n, "")}
        refused = any("failed to alloc queue" in l for l in self.host.output()[since:])
        may_keep = vring_fds if refused else 0

        def state():
            fds = fd_targets(self.host.pid)
            return len(fds), self.held_fds(fds), self.held_maps()
        n, kept, _ = until(
            state, lambda s: s[0] <= self.base_fds + len(self.vhost_kept) + len(s[1]) + FD_SLACK
            and len(s[1]) <= may_keep and not s[2], ANSWER_S,
            f"fds back within {FD_SLACK} of {self.base_fds}, no mapping of what was sent, and no fd "
            f"sent still held beyond {may_keep} vhost keeps", alive=self.host.alive)
        self.vhost_kept |= set(kept)
        rss = self.rss_kb()
        assert rss <= self.base_rss + RSS_SLACK_KB, f"RSS {rss} kB, {self.base_rss} kB at start"

    def show_device(self):
        """The app's `show device 0` line naming the frontend (an app
        command answered within the deadline)."""
        since = self.host.mark()
        self.host.send("show device 0")
        return self.host.wait_line(lambda l: " frontend: " in l, ANSWER_S, "show device 0", since=since)

    def serve_frontend(self):
        """A correct frontend (Debian's dpdk-testpmd over virtio_user) gets
        its rings RDY and its packets loop back losslessly."""
        fe = Frontend(self.sock, QP, unique("fe"), extra=["--port-topology=loop"],
                      log_path=self.wd.file("frontend.log"))
        try:
            until(self.show_device, lambda l: "frontend: ready" in l, DEADLINE_S, "the frontend ready")
            fe.send("set fwd io")
            fe.send("start tx_first")
            fe.read_until(lambda l: "io packet forwarding" in l, DEADLINE_S)
            until(fe.port_stats, lambda st: st[1] > 32 * QP, DEADLINE_S, "packets circulating")
            fe.send("stop")
            fe.read_until(lambda l: "Done." in l, DEADLINE_S)
            fe.send("set fwd rxonly")
            fe.send("start")
            rx, tx = until(fe.port_stats, lambda st: st[0] == st[1], DEADLINE_S,
                           "RX == TX: every packet sent came back")
            assert tx > 32 * QP, (rx, tx)
            fe.send("stop")
            fe.read_until(lambda l: "Done." in l, DEADLINE_S)
            fe.quit()
        finally:
            fe.stop()
        return tx

    def stop(self):
        """`quit`: the app closes its socket and exits 0."""
        self.host.send("quit")
        rc = self.host.wait(DEADLINE_S)
        assert rc == 0, f"vdpa-testpmd exited {rc}"

    def kill(self):
        self.host.kill()
