"""Helpers for EAL-level tests: unique EAL file prefixes, private socket
folders, processes that are always killed, bounded waits on their output,
the scripts' command line (run_case)."""
import argparse
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

EAL_COMMON = ["--no-huge", "-m", "256", "--no-pci", "--log-level", "pmd.vdpa.mlx5async:info"]


def kill_group(p):
    """SIGKILL to a child started with start_new_session (it and everything
    it started), then reap it."""
    if p.poll() is None:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait(10)


def frontend_argv(socket, queues, prefix, vdev_extra="", testpmd_args=()):
    """Debian's dpdk-testpmd over net_virtio_user on `socket`: the vhost-user
    frontend of the EAL-level tests."""
    return ["dpdk-testpmd"] + EAL_COMMON + [
        "--file-prefix", prefix, "--vdev", f"net_virtio_user0,path={socket},queues={queues}{vdev_extra}",
        "--", f"--rxq={queues}", f"--txq={queues}", "--total-num-mbufs=4096",
        "--disable-link-check"] + list(testpmd_args)


class Proc:
    """A child process whose output lines are collected by a reader thread
    (select() on a buffered pipe would miss lines already buffered)."""

    def __init__(self, argv, env=None, name="proc"):
        self.name = name
        self.argv = argv
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, env=env, text=True, bufsize=1,
                                  start_new_session=True)
        self.lines = []
        self._q = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.p.stdout:
            self._q.put(line.rstrip("\n"))
        self._q.put(None)

    def read_until(self, pred, timeout):
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            if left <= 0:
                break
            try:
                line = self._q.get(timeout=left)
            except queue.Empty:
                break
            if line is None:
                break
            self.lines.append(line)
            if pred(line):
                return line
        raise AssertionError(f"{self.name}: no expected line within {timeout}s; output:\n" +
                             "\n".join(self.lines[-60:]))

    def send(self, text):
        self.p.stdin.write(text + "\n")
        self.p.stdin.flush()

    def wait(self, timeout):
        try:
            return self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"{self.name}: did not exit within {timeout}s")

    def kill(self):
        kill_group(self.p)


class Host(Proc):
    """tests/e2e/vdpa_host: JSON line per command."""

    def __init__(self, binary, vdev, socket, prefix, extra_eal=(), env=None):
        argv = [binary] + EAL_COMMON + ["--file-prefix", prefix, "--vdev", vdev] + \
            list(extra_eal) + ["--", "--socket", socket]
        super().__init__(argv, env=env, name="vdpa_host")
        self.read_until(lambda l: l.startswith('{"ready"'), 60)

    def cmd(self, text, timeout=60):
        self.send(text)
        line = self.read_until(lambda l: l.startswith("{"), timeout)
        return json.loads(line)


class Frontend(Proc):
    """Debian's dpdk-testpmd over net_virtio_user: a real vhost-user frontend.

    Interactive mode without `start` by default: the port is configured and
    started (the backend's dev_conf), but no lcore busy-polls the rings, which
    would take one of this machine's two cores from the measurements.
    forward=True runs io forwarding (non-interactive) instead."""

    def __init__(self, socket, queues, prefix, extra=(), forward=False):
        # stdbuf: testpmd block-buffers stdout into a pipe.
        argv = ["stdbuf", "-oL"] + frontend_argv(socket, queues, prefix,
                                                 testpmd_args=([] if forward else ["-i"]) + list(extra))
        super().__init__(argv, name="dpdk-testpmd")
        self.forward = forward
        if forward:
            self.read_until(lambda l: "Press enter to exit" in l, 180)
        else:
            # Printed once the port is started (after the vhost-user set-up).
            self.read_until(lambda l: l.startswith("Port 0: "), 180)

    def quit(self):
        """testpmd stops its port (virtio_user disables every ring, then
        GET_VRING_BASE: the backend's dev_close) and exits."""
        if self.p.poll() is None:
            self.send("" if self.forward else "quit")
            self.wait(60)


class HostSession:
    """A vdpa_host serving `vdpa_mlx5async0,...` on a socket in a private
    folder. Leaving the `with` block kills the processes given to track()
    (frontends), quits the host and removes the folder, whatever happened."""

    def __init__(self, binary, vdev, prefix=None, env=None, extra_eal=()):
        self.wd = Workdir()
        self.sock = os.path.join(self.wd.path, "vhost.sock")
        self.prefix = prefix or unique("host")
        self._tracked = []
        try:
            self.host = Host(binary, vdev, self.sock, self.prefix, extra_eal=extra_eal, env=env)
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
        except (BrokenPipeError, OSError):
            self.host.kill()
        self.wd.close()
        return False


class Workdir:
    def __init__(self):
        self.path = tempfile.mkdtemp(prefix="mlx5a-e2e-")
        os.chmod(self.path, 0o700)

    def close(self):
        shutil.rmtree(self.path, ignore_errors=True)


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


_counter = 0


def unique(prefix):
    """A unique EAL --file-prefix: pid + per-process counter (two processes
    started in the same millisecond must not share one)."""
    global _counter
    _counter += 1
    return f"{prefix}-{os.getpid()}-{_counter}"


class Skip(Exception):
    """A case that cannot run on this machine (the reason is the message)."""


def run_case(cases, *options):
    """Every e2e script's entry: `SCRIPT CASE --option VALUE ...` runs one case
    of `cases` (name -> function of the parsed arguments) and prints
    "CASE: ok". `options` are (flag, argparse keyword arguments) pairs. A
    case that raises Skip exits 77: Meson counts it skipped, not passed."""
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=sorted(cases))
    for flag, kw in options:
        ap.add_argument(flag, **kw)
    a = ap.parse_args()
    try:
        cases[a.case](a)
    except Skip as e:
        print(f"{a.case}: skipped: {e}")
        sys.exit(77)
    print(f"{a.case}: ok")
