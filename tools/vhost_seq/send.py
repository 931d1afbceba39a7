"""Sends one sequence of gen.py's messages on a fresh connection, making
each message's fds at send time (the host keeps its own copies)."""
import os

from harness import vhost_user as vu

TAG = "vhost-seq-sent"  # in the name of every memfd and file sent: a leak check finds them


class Fds:
    """Makes the fds of one message and closes this side's copies."""

    def __init__(self, folder):
        self.folder = folder
        self.mine = []

    def make(self, kind):
        name, _, arg = kind.partition(":")
        if name in ("eventfd", "eventfd-nb"):
            return self._keep(os.eventfd(0, os.EFD_CLOEXEC | (os.EFD_NONBLOCK if name == "eventfd-nb" else 0)))
        if name == "memfd":
            fd = self._keep(os.memfd_create(TAG, os.MFD_CLOEXEC))
            os.ftruncate(fd, int(arg))
            return fd
        if name in ("pipe-r", "pipe-w"):
            r, w = os.pipe()
            self._keep(r)
            self._keep(w)
            return r if name == "pipe-r" else w
        if name == "null":
            return self._keep(os.open("/dev/null", os.O_RDWR | os.O_CLOEXEC))
        if name == "file":
            path = os.path.join(self.folder, f"{TAG}-{len(self.mine)}")
            fd = self._keep(os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600))
            os.ftruncate(fd, int(arg))
            os.unlink(path)  # the host's copy keeps it: a leak shows as "(deleted)"
            return fd
        raise ValueError(f"unknown fd kind {kind!r}")

    def _keep(self, fd):
        self.mine.append(fd)
        return fd

    def close(self):
        for fd in self.mine:
            os.close(fd)
        self.mine = []


def wire(m):
    """The bytes of message m, its header's size as the message says."""
    payload = bytes.fromhex(m["payload"])
    size = len(payload) if m["size"] is None else m["size"]
    data = vu.header(m["req"], m["flags"], size) + payload
    return data if m["cut"] is None else data[:m["cut"]]


def send_sequence(path, messages, folder, timeout):
    """Connects, sends every message (draining replies), closes. Returns
    how many messages went out before the host closed the connection."""
    conn = vu.Conn(path, timeout)
    sent = 0
    try:
        for m in messages:
            fds = Fds(folder)
            try:
                conn.send(wire(m), [fds.make(k) for k in m["fds"]])
            except (BrokenPipeError, ConnectionResetError):
                return sent
            finally:
                fds.close()
            sent += 1
            if conn.drain() is False:
                return sent
        return sent
    finally:
        conn.close()

