#!/usr/bin/python3
"""The install as a user gets it, staged in a DESTDIR (`meson install
--destdir`, nothing written outside it):

- files: the PMD in DPDK's plugin folder (and linked from the library
  folder), the header, libmlx5async.pc, vdpa-testpmd, the guides; the
  emulator plugin (libmlx5emu.so under its own name, mlx5emu.h) apart: the
  PMD holds no emulator symbol and links no emulator library;
- eal-scan: Debian's unmodified dpdk-testpmd given the staged plugin folder
  (-d DIR, as EAL scans its own) probes vdpa_mlx5async0,emu=cx7;
- traffic: the installed vdpa-testpmd serves a virtio_user frontend
  (Debian's dpdk-testpmd) whose packets come back;
- pkg-config: a C program built with only `pkg-config --cflags --libs
  libmlx5async` calls the public API;
- package: tools/package.py makes two .debs of the install, the driver and
  the emulator plugin (which depends on the driver); dpkg installs both into
  a scratch root (dpkg --root) and lists each one's files.

  test_install.py CASE --build-dir B --prefix P --libdir L ... --pmd-dir D --client C
"""
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(TOP, "tools"))
from harness.cases import run_case  # noqa: E402
from harness.frontend import Frontend  # noqa: E402
from harness.host import EAL_COMMON  # noqa: E402
from harness.proc import Proc, unique  # noqa: E402
from harness.wait import until  # noqa: E402

PMD = "librte_vdpa_mlx5async.so"
VDEV = "vdpa_mlx5async0,emu=cx7,queues=2,queue_size=256"


class Staged:
    """An install into a private DESTDIR under the build folder (EAL takes
    -d plugins only outside world-writable folders such as /tmp)."""

    def __init__(self, a):
        self.a = a
        self.root = os.path.join(os.path.abspath(a.build_dir), "install-test", unique("destdir"))
        os.makedirs(self.root, mode=0o700)
        subprocess.run(["meson", "install", "-C", os.path.abspath(a.build_dir), "--destdir", self.root,
                        "--no-rebuild", "--quiet"], check=True)

    def path(self, *parts):
        """The staged location of an absolute install path."""
        return os.path.join(self.root, os.path.join(*parts).lstrip("/"))

    def libdir(self):
        return self.path(self.a.prefix, self.a.libdir)

    def close(self):
        shutil.rmtree(self.root, ignore_errors=True)


def driver_files(a):
    """Where each file of the driver's install goes, as absolute paths."""
    p = a.prefix
    return [
        os.path.join(a.pmd_dir, PMD),
        os.path.join(a.pmd_dir, PMD + ".0"),
        os.path.join(p, a.libdir, PMD),
        os.path.join(p, a.libdir, PMD + ".0"),
        os.path.join(p, a.includedir, "mlx5async", "rte_pmd_mlx5async.h"),
        os.path.join(p, a.libdir, "pkgconfig", "libmlx5async.pc"),
        os.path.join(p, a.bindir, "vdpa-testpmd"),
        os.path.join(p, a.datadir, "doc", "mlx5async", "mlx5async.md"),
        os.path.join(p, a.datadir, "doc", "mlx5async", "live-migration.md"),
    ]


def emulator_files(a):
    """The emulator plugin's: the library the PMD loads for emu= and its API."""
    p = a.prefix
    return [os.path.join(p, a.libdir, "libmlx5emu.so.0"), os.path.join(p, a.includedir, "mlx5emu", "mlx5emu.h")]


def installed_files(a):
    return driver_files(a) + emulator_files(a)


def staged_env(a, s, **extra):
    """The staged install's programs: the PMD finds the staged plugin (an
    install finds it where it installed)."""
    return dict(os.environ, MLX5ASYNC_EMU_LIB=s.path(emulator_files(a)[0]), **extra)


def case_files(a, s):
    for f in installed_files(a):
        assert os.path.exists(s.path(f)), f"not installed: {f}"
    # The library folder's entries lead to the plugin's file.
    for name in (PMD, PMD + ".0"):
        assert os.path.samefile(s.path(a.prefix, a.libdir, name), s.path(a.pmd_dir, name)), name
    # Never shadowing rdma-core's libmlx5: nothing of that name is installed.
    for d, _, files in os.walk(s.root):
        for f in files:
            assert not f.startswith("libmlx5.so"), os.path.join(d, f)
    # The PMD carries nothing of the emulator: no symbol of it (nm, every
    # symbol table: the staged install is not stripped), no library of it.
    pmd = s.path(a.pmd_dir, PMD)
    syms = subprocess.run(["nm", "-C", pmd], capture_output=True, text=True, check=True).stdout
    emu = [l for l in syms.splitlines() if "mlx5async::emu::" in l or "mlx5emu_" in l]
    assert not emu, f"{len(emu)} emulator symbols in the PMD, e.g. {emu[:5]}"
    needs = subprocess.run(["objdump", "-p", pmd], capture_output=True, text=True, check=True).stdout
    assert "libmlx5emu" not in needs, needs


def case_eal_scan(a, s):
    argv = ["dpdk-testpmd"] + EAL_COMMON + ["--file-prefix", unique("scan"),
                                             "-d", s.path(a.pmd_dir), "--vdev", VDEV,
                                             "--vdev", "net_null0", "--",
                                             "--total-num-mbufs=2048", "--no-mlockall"]
    p = subprocess.run(argv, input="\n", capture_output=True, text=True, timeout=120, env=staged_env(a, s))
    out = p.stdout + p.stderr
    assert "vdpa_mlx5async0: probed emu:cx7" in out, out[-3000:]
    assert p.returncode == 0, out[-3000:]


def case_traffic(a, s):
    """The installed vdpa-testpmd, its PMD found through the staged library
    folder, and EAL pointed at the staged plugin folder (it finds that same
    library already loaded)."""
    wd = os.path.join(s.root, "run")
    os.makedirs(wd, mode=0o700)
    env = staged_env(a, s, LD_LIBRARY_PATH=s.libdir())
    app = Proc([s.path(a.prefix, a.bindir, "vdpa-testpmd")] + EAL_COMMON +
               ["--file-prefix", unique("inst"), "-d", s.path(a.pmd_dir), "--vdev", VDEV, "--",
                "--iface", os.path.join(wd, "vhost"), "--auto-start", "--wait-ready", "120", "-i"],
               "installed vdpa-testpmd", log_path=os.path.join(wd, "app.log"), env=env, stdin=True)
    fe = None
    try:
        app.read_until(lambda l: "attached to" in l, 60)
        fe = Frontend(os.path.join(wd, "vhost0"), 2, unique("fe"), extra=["--port-topology=loop"],
                      log_path=os.path.join(wd, "frontend.log"))
        app.read_until(lambda l: "frontend ready" in l, 150)
        fe.send("start tx_first")
        fe.read_until(lambda l: "Start automatic packet forwarding" in l or "io packet forwarding" in l, 60)
        until(fe.port_stats, lambda st: st[0] > 0, 60, "packets coming back")  # they circulate
        fe.send("stop")
        block = []
        fe.read_until(lambda l: block.append(l) or "Done." in l, 60)
        text = "\n".join(block)
        rx = sum(int(x) for x in re.findall(r"RX-packets:\s*(\d+)", text))
        tx = sum(int(x) for x in re.findall(r"TX-packets:\s*(\d+)", text))
        assert rx > 0 and tx > 0, f"no packets came back (RX {rx}, TX {tx}):\n{text}"
        fe.quit()
        fe = None
        app.send("quit")
        assert app.wait(60) == 0, app.tail(40)
    finally:
        if fe:
            fe.kill()
        app.kill()


def case_pkg_config(a, s):
    pc_dir = s.path(a.prefix, a.libdir, "pkgconfig")
    env = dict(os.environ, PKG_CONFIG_PATH=pc_dir)
    flags = subprocess.run(["pkg-config", f"--define-variable=destdir={s.root}", "--cflags",
                            "--libs", "libmlx5async"], env=env, capture_output=True, text=True,
                           check=True).stdout.split()
    exe = os.path.join(s.root, "api-client")
    subprocess.run(["cc", a.client, "-o", exe] + flags, check=True)
    p = subprocess.run([exe] + EAL_COMMON + ["--file-prefix", unique("client"), "--vdev", VDEV],
                       env=staged_env(a, s, LD_LIBRARY_PATH=s.libdir()), capture_output=True,
                       text=True, timeout=120)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-3000:]
    assert re.search(r"api-client: vdpa_mlx5async0 backend emu:cx7\S* virtqs 4 of \d+", out), out[-3000:]


def case_package(a, s):
    out_dir = os.path.join(s.root, "deb")
    debs = subprocess.run([sys.executable, os.path.join(TOP, "tools", "package.py"),
                           "--destdir", s.root, "--out", out_dir], capture_output=True, text=True,
                          check=True).stdout.split()
    assert len(debs) == 2, debs
    field = lambda deb, f: subprocess.run(["dpkg-deb", "--field", deb, f], capture_output=True,
                                          text=True, check=True).stdout.strip()
    by_name = {field(d, "Package"): d for d in debs}
    assert set(by_name) == {"mlx5async", "mlx5async-emulator"}, by_name
    depends = field(by_name["mlx5async"], "Depends")
    for pkg in ("librte-vhost", "librte-eal", "libibverbs1", "ibverbs-providers"):
        assert pkg in depends, f"Depends lacks {pkg}: {depends}"
    version = field(by_name["mlx5async"], "Version")
    emu_depends = field(by_name["mlx5async-emulator"], "Depends")
    assert f"mlx5async (= {version})" in emu_depends, emu_depends
    root = os.path.join(s.root, "scratch-root")
    for d in ("var/lib/dpkg/info", "var/lib/dpkg/updates", "var/lib/dpkg/triggers"):
        os.makedirs(os.path.join(root, d))
    open(os.path.join(root, "var/lib/dpkg/status"), "w").close()
    # The scratch root has none of the system's dependencies: they are the system's.
    subprocess.run(["dpkg", "--root", root, "--force-depends", "--force-not-root",
                    "--log=/dev/null", "-i", by_name["mlx5async"], by_name["mlx5async-emulator"]],
                   check=True, capture_output=True)
    # The packages are built from an install with this build's prefix.
    for pkg, files in (("mlx5async", driver_files(a)), ("mlx5async-emulator", emulator_files(a))):
        listed = subprocess.run(["dpkg", "--root", root, "-L", pkg], capture_output=True,
                                text=True, check=True).stdout.split()
        for f in files:
            assert f in listed, f"{f} not in {pkg}: {listed}"
            assert os.path.lexists(os.path.join(root, f.lstrip("/"))), f"{f} not installed by dpkg"


CASES = {"files": case_files, "eal-scan": case_eal_scan, "traffic": case_traffic,
         "pkg-config": case_pkg_config, "package": case_package}


def staged_case(a):
    """The case on a fresh install, removed after."""
    s = Staged(a)
    try:
        CASES[a.case](a, s)
    finally:
        s.close()


if __name__ == "__main__":
    run_case({name: staged_case for name in CASES},
             *[(opt, {"required": True}) for opt in ("--build-dir", "--prefix", "--libdir", "--bindir",
                                                      "--datadir", "--includedir", "--pmd-dir", "--client")])
