"""Helpers of the vdpa-testpmd end-to-end tests: the app and the frontend
as processes with output in files, scripts, ordered output matching."""
import itertools
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from e2e_lib import EAL_COMMON, frontend_argv, kill_group  # noqa: E402
from e2e_lib import unique as _unique  # noqa: E402

_SEQ = itertools.count()


def unique(prefix):
    """EAL file prefixes and file names: distinct even within one millisecond."""
    return _unique(f"{prefix}{next(_SEQ)}")

QP = 4            # queue pairs of the device and of the frontend: 8 virtqs
VQS = 2 * QP
# Short emulated latencies: the tests check behaviour, not speed.
FAST = "emu_modify_us=20,emu_query_us=30,emu_create_us=20,emu_destroy_us=20,emu_umem_us=5"
VDEV = f"vdpa_mlx5async0,emu=cx7,queues={QP},queue_size=256,{FAST}"
DEADLINE = 120    # seconds for anything to happen on a loaded 2-core machine


def app_argv(args, wd, prefix, app_opts, vdevs=None):
    eal = []
    for v in vdevs or [VDEV]:
        eal += ["--vdev", v]
    return [args.app] + EAL_COMMON + ["--file-prefix", prefix] + eal + [
        "--", "--iface", os.path.join(wd.path, "vhost")] + app_opts


class App:
    """The app with its output in a file: it never blocks on a full pipe
    while a test waits for the frontend (vhost logs are verbose)."""

    def __init__(self, args, wd, app_opts, stdin=subprocess.DEVNULL, vdevs=None):
        self.log_path = os.path.join(wd.path, f"app-{unique('log')}.log")
        self.log = open(self.log_path, "w")
        self.p = subprocess.Popen(app_argv(args, wd, unique("app"), app_opts, vdevs), stdin=stdin,
                                  stdout=self.log, stderr=subprocess.STDOUT, text=True,
                                  start_new_session=True)

    def lines(self):
        with open(self.log_path, errors="replace") as f:
            return f.read().splitlines()

    def wait_for(self, pattern, timeout=DEADLINE, count=1):
        """Polls the output (every 50 ms, bounded) until count lines match."""
        rx = re.compile(pattern)
        end = time.monotonic() + timeout
        while True:
            if sum(1 for l in self.lines() if rx.search(l)) >= count:
                return
            if self.p.poll() is not None or time.monotonic() > end:
                if sum(1 for l in self.lines() if rx.search(l)) >= count:
                    return
                raise AssertionError(f"app: no line matching {pattern!r}; output:\n" +
                                     "\n".join(self.lines()[-80:]))
            time.sleep(0.05)

    def send(self, text):
        self.p.stdin.write(text + "\n")
        self.p.stdin.flush()

    def wait(self, timeout=DEADLINE):
        try:
            return self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"app: did not exit within {timeout}s; output:\n" +
                                 "\n".join(self.lines()[-80:]))

    def kill(self):
        kill_group(self.p)
        self.log.close()


def run_app(args, wd, app_opts, vdevs=None):
    """Runs the app to completion; returns (exit status, output lines)."""
    app = App(args, wd, app_opts, vdevs=vdevs)
    try:
        rc = app.wait()
        return rc, app.lines()
    finally:
        app.kill()


def start_frontend(wd, sock="vhost0", server=False):
    """Debian's dpdk-testpmd over net_virtio_user on one of the app's sockets
    (server=True: testpmd owns the socket, the app runs with --client).
    Nothing is awaited here: the app's --wait-ready is the synchronisation,
    and the app may finish (and close the socket) before testpmd is done
    starting. Interactive mode without `start`: the port is configured (the
    virtqs become RDY) but no lcore busy-polls one of the machine's cores."""
    log = open(os.path.join(wd.path, f"frontend-{sock}.log"), "w")
    argv = frontend_argv(os.path.join(wd.path, sock), QP, unique(f"fe-{sock}"),
                         vdev_extra=",server=1" if server else "", testpmd_args=["-i"])
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT,
                         text=True, start_new_session=True)
    return p, log


def stop_frontend(fe):
    p, log = fe
    if p.poll() is None:
        try:
            p.stdin.write("quit\n")
            p.stdin.flush()
            p.wait(30)
        except (BrokenPipeError, subprocess.TimeoutExpired):
            pass
    kill_group(p)
    log.close()


def with_frontend(args, wd, app_opts, devices=1, vdevs=None):
    """Starts the app, then one frontend per device on its socket; returns
    the app's (exit status, lines) once it exits. On a non-zero status the
    frontends' output follows the app's, for the failure message."""
    app = App(args, wd, app_opts, vdevs=vdevs)
    fes = []
    try:
        for d in range(devices):
            app.wait_for(rf"attached to .*vhost{d}")
            fes.append(start_frontend(wd, f"vhost{d}"))
        rc = app.wait(4 * DEADLINE)
        lines = app.lines()
        if rc != 0:
            for d in range(devices):
                with open(os.path.join(wd.path, f"frontend-vhost{d}.log")) as f:
                    lines += [f"--- frontend vhost{d}:"] + f.read().splitlines()[-30:]
        return rc, lines
    finally:
        app.kill()
        for fe in fes:
            stop_frontend(fe)


def script(wd, text):
    path = os.path.join(wd.path, "session.txt")
    with open(path, "w") as f:
        f.write(text)
    return path


def expect(lines, *patterns):
    """Every pattern (regex) matches some line, in this order."""
    pos = 0
    for pat in patterns:
        rx = re.compile(pat)
        while pos < len(lines) and not rx.search(lines[pos]):
            pos += 1
        assert pos < len(lines), f"no line matching {pat!r} in order; output:\n" + "\n".join(lines)
        pos += 1
