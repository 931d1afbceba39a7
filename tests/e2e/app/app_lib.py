"""Helpers of the vdpa-testpmd end-to-end tests: the app and the frontend
started as the tests want them (processes of the harness, tools/harness),
scripts, ordered output matching."""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tools"))
from harness.frontend import Frontend  # noqa: E402
from harness.host import EAL_COMMON  # noqa: E402
from harness.proc import Proc, unique  # noqa: E402
from harness.wait import DEADLINE_S as DEADLINE  # noqa: E402,F401  (the tests' deadline)

QP = 4            # queue pairs of the device and of the frontend: 8 virtqs
VQS = 2 * QP
# Short emulated latencies: the tests check behaviour, not speed.
FAST = "emu_modify_us=20,emu_query_us=30,emu_create_us=20,emu_destroy_us=20,emu_umem_us=5"
VDEV = f"vdpa_mlx5async0,emu=cx7,queues={QP},queue_size=256,{FAST}"


def app_argv(args, wd, prefix, app_opts, vdevs=None, eal_opts=()):
    eal = list(eal_opts)
    for v in vdevs or [VDEV]:
        eal += ["--vdev", v]
    return [args.app] + EAL_COMMON + ["--file-prefix", prefix] + eal + [
        "--", "--iface", wd.file("vhost")] + app_opts


def start_app(args, wd, app_opts, stdin=False, vdevs=None, eal_opts=()):
    """The app with its output in the folder (vhost logs are verbose); with
    `stdin` it takes commands (send()); `eal_opts`: more EAL options."""
    return Proc(app_argv(args, wd, unique("app"), app_opts, vdevs, eal_opts), "app",
                log_path=wd.file(unique("app") + ".log"), stdin=stdin)


def run_app(args, wd, app_opts, vdevs=None):
    """Runs the app to completion; returns (exit status, output lines)."""
    app = start_app(args, wd, app_opts, vdevs=vdevs)
    try:
        rc = app.wait()
        return rc, list(app.output())
    finally:
        app.kill()


def start_frontend(wd, sock="vhost0", server=False):
    """Debian's dpdk-testpmd over net_virtio_user on one of the app's sockets
    (server=True: testpmd owns the socket, the app runs with --client).
    Nothing is awaited here: the app's --wait-ready is the synchronisation,
    and the app may finish (and close the socket) before testpmd is done
    starting. Interactive mode without `start`: the port is configured (the
    virtqs become RDY) but no lcore busy-polls one of the machine's cores."""
    return Frontend(wd.file(sock), QP, unique(f"fe-{sock}"), server=server, wait=False,
                    log_path=wd.file(f"frontend-{sock}.log"))


def with_frontend(args, wd, app_opts, devices=1, vdevs=None, eal_opts=()):
    """Starts the app, then one frontend per device on its socket; returns
    the app's (exit status, lines) once it exits. On a non-zero status the
    frontends' output follows the app's, for the failure message."""
    app = start_app(args, wd, app_opts, vdevs=vdevs, eal_opts=eal_opts)
    fes = []
    try:
        for d in range(devices):
            app.wait_for(rf"attached to .*vhost{d}")
            fes.append(start_frontend(wd, f"vhost{d}"))
        rc = app.wait(4 * DEADLINE)
        lines = list(app.output())
        if rc != 0:
            for d, fe in enumerate(fes):
                lines += [f"--- frontend vhost{d}:"] + fe.output()[-30:]
        return rc, lines
    finally:
        app.kill()
        for fe in fes:
            fe.stop()


def script(wd, text):
    path = wd.file("session.txt")
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
