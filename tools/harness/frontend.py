"""vhost-user frontends of the harness: Debian's dpdk-testpmd over
net_virtio_user (Frontend), and tools/vhost-user-guest (VhostUserGuest),
which takes commands and answers each with one JSON line."""
import json
import re

from .host import EAL_COMMON
from .proc import Proc, unique


class Frontend(Proc):
    """dpdk-testpmd over net_virtio_user on `socket` with `queues` pairs.

    Interactive mode without `start` by default: the port is configured and
    started (the backend's dev_conf), but no lcore busy-polls the rings,
    which would take one of the machine's two cores. forward=True runs io
    forwarding (non-interactive) instead. server=True: testpmd owns the
    socket (the backend connects as a client). wait=False returns at once
    (when the backend's own readiness is the synchronisation)."""

    def __init__(self, socket, queues, prefix=None, extra=(), forward=False, server=False, wait=True,
                 log_path=None):
        vdev = f"net_virtio_user0,path={socket},queues={queues}" + (",server=1" if server else "")
        # stdbuf: testpmd block-buffers stdout into a file.
        argv = ["stdbuf", "-oL", "dpdk-testpmd"] + EAL_COMMON + [
            "--file-prefix", prefix or unique("fe"), "--vdev", vdev,
            "--", f"--rxq={queues}", f"--txq={queues}", "--total-num-mbufs=4096",
            "--disable-link-check"] + ([] if forward else ["-i"]) + list(extra)
        super().__init__(argv, "dpdk-testpmd", log_path=log_path, stdin=True)
        self.forward = forward
        if wait:
            self.wait_started()

    def wait_started(self, timeout=180):
        if self.forward:
            self.read_until(lambda l: "Press enter to exit" in l, timeout, "forwarding started")
        else:  # printed once the port is started (after the vhost-user set-up)
            self.read_until(lambda l: l.startswith("Port 0: "), timeout, "port 0 started")

    def port_stats(self):
        """Cumulative (RX, TX) packets of port 0 (`show port stats 0`)."""
        self.send("show port stats 0")
        rx = self.read_until(lambda l: "RX-packets:" in l, 30, "RX-packets")
        tx = self.read_until(lambda l: "TX-packets:" in l, 30, "TX-packets")
        return (int(re.search(r"RX-packets:\s*(\d+)", rx).group(1)),
                int(re.search(r"TX-packets:\s*(\d+)", tx).group(1)))

    def quit(self):
        """testpmd stops its port (virtio_user disables every ring, then
        GET_VRING_BASE: the backend's dev_close) and exits."""
        if self.alive():
            self.send("" if self.forward else "quit")
            self.wait(60)

    def stop(self):
        """quit() if it still can, then kill(): for clean-up paths."""
        try:
            self.quit()
        except (AssertionError, OSError, ValueError):
            pass
        self.kill()


class VhostUserGuest(Proc):
    """tools/vhost-user-guest on `socket` with `pairs` queue pairs."""

    def __init__(self, binary, socket, pairs, extra=(), log_path=None):
        super().__init__([binary, "--socket", socket, "--pairs", str(pairs)] + list(extra),
                         "vhost-user-guest", log_path=log_path, stdin=True)

    def reply(self, timeout=60, what="answer"):
        """The next JSON answer (of a command sent before)."""
        return json.loads(self.read_until(lambda l: l.startswith("{"), timeout, what))

    def cmd(self, text, ok=True, timeout=60):
        """One command and its answer; with `ok`, the answer must say ok."""
        self.send(text)
        r = self.reply(timeout, f"answer to '{text}'")
        if ok:
            assert r.get("ok") is True, (text, r)
        return r

    def quit(self):
        if self.alive():
            self.cmd("quit")
            assert self.wait(30) == 0, f"vhost-user-guest exited non-zero:\n{self.tail()}"
