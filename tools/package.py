#!/usr/bin/env python3
"""./run package: Debian packages of mlx5async's install (dpkg-deb): the
driver (mlx5async) and the emulator plugin the PMD loads for emu= devices
(mlx5async-emulator, depending on the driver of the same version).

Without --destdir it builds from a clean tree: the committed HEAD (git
archive), a fresh Meson build with prefix /usr (release, stripped, no tests
or benchmarks), `meson install --destdir`, then the packages, into out/package/.
With --destdir D it packages the install already in D (the tests do).
Depends: the Debian packages of every shared library the installed
binaries need (NEEDED entries, found with ldconfig and dpkg -S), at least
at their installed versions. Prints each package's path.

usage: package.py [--sdk DIR] [--destdir D] [--out DIR]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME = "mlx5async"
EMULATOR = "mlx5async-emulator"
DESCRIPTION = {
    NAME: """DPDK vDPA driver for NVIDIA ConnectX with a batched control path
 vdpa_mlx5async drives virtio-net virtqueues of ConnectX-6 Dx, ConnectX-7 and
 BlueField devices through DevX, suspending and resuming every queue of a
 device in a few waves of asynchronous firmware commands: the device stop
 and start of a live migration. Installed into DPDK's plugin folder, every
 DPDK application probes it (--vdev vdpa_mlx5async0,dev=<PCI BDF>). Ships
 vdpa-testpmd and the public API (rte_pmd_mlx5async.h, libmlx5async.pc).""",
    EMULATOR: """emulated ConnectX for the mlx5async vDPA driver
 libmlx5emu.so: a ConnectX firmware command interface, virtio datapath and
 calibrated cost model. The driver loads it for emu=<profile> devices
 (--vdev vdpa_mlx5async0,emu=cx7), so everything runs without the hardware;
 it also serves any rdma-core DevX program as a drop-in libmlx5 (LD_PRELOAD).
 Its own API: mlx5emu.h (fault rules, the cost model).""",
}
# Files of the install that are the emulator plugin's (by name).
EMULATOR_FILES = re.compile(r"^(libmlx5emu\.so.*|mlx5emu\.h)$")


def run(argv, **kw):
    return subprocess.run(argv, check=True, text=True, **kw)


def project_version():
    with open(os.path.join(TOP, "meson.build")) as f:
        return re.search(r"version:\s*'([^']+)'", f.read()).group(1)


def elf_files(root):
    for d, _, files in os.walk(root):
        for n in files:
            p = os.path.join(d, n)
            if os.path.islink(p) or not os.path.isfile(p):
                continue
            with open(p, "rb") as f:
                if f.read(4) == b"\x7fELF":
                    yield p


def needed(path):
    out = run(["objdump", "-p", path], capture_output=True).stdout
    return re.findall(r"^\s*NEEDED\s+(\S+)", out, re.M)


def depends(root):
    """'pkg (>= version)' for every library the install needs and does not ship."""
    shipped = {os.path.basename(p) for d, _, fs in os.walk(root) for p in fs}
    multiarch = sysconfig.get_config_var("MULTIARCH") or ""
    cache = {}
    for line in run(["ldconfig", "-p"], capture_output=True).stdout.splitlines()[1:]:
        m = re.match(r"\s*(\S+) \(([^)]*)\) => (\S+)", line)
        if m and multiarch in m.group(3):  # this architecture's, not lib32's
            cache.setdefault(m.group(1), m.group(3))
    pkgs = {}
    for elf in elf_files(root):
        for lib in needed(elf):
            if lib in shipped:
                continue
            path = cache.get(lib)
            if not path:
                raise SystemExit(f"package: {elf} needs {lib}, which no installed library provides")
            owner = None
            for candidate in (path, os.path.realpath(path)):
                q = subprocess.run(["dpkg", "-S", candidate], capture_output=True, text=True)
                if q.returncode == 0:
                    owner = q.stdout.split(":")[0].strip()
                    break
            if not owner:
                raise SystemExit(f"package: no Debian package owns {path} ({lib})")
            if owner not in pkgs:
                ver = run(["dpkg-query", "-W", "-f=${Version}", owner], capture_output=True).stdout
                pkgs[owner] = ver
    return [f"{p} (>= {v})" for p, v in sorted(pkgs.items())]


def make_deb(root, out_dir, name, extra_depends=()):
    version = project_version()
    arch = run(["dpkg", "--print-architecture"], capture_output=True).stdout.strip()
    control_dir = os.path.join(root, "DEBIAN")
    os.makedirs(control_dir, exist_ok=True)
    size_kb = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(root) for f in fs
                  if not os.path.islink(os.path.join(d, f))) // 1024
    control = (f"Package: {name}\nVersion: {version}\nArchitecture: {arch}\n"
               "Maintainer: mlx5async developers <mlx5async@localhost>\n"
               f"Installed-Size: {size_kb}\nSection: net\nPriority: optional\n"
               f"Depends: {', '.join(list(extra_depends) + depends(root))}\n"
               f"Description: {DESCRIPTION[name]}\n")
    with open(os.path.join(control_dir, "control"), "w") as f:
        f.write(control)
    with open(os.path.join(control_dir, "triggers"), "w") as f:
        f.write("activate-noawait ldconfig\n")  # it ships shared libraries
    os.makedirs(out_dir, exist_ok=True)
    deb = os.path.join(out_dir, f"{name}_{version}_{arch}.deb")
    run(["dpkg-deb", "--root-owner-group", "--build", root, deb], stdout=subprocess.DEVNULL)
    shutil.rmtree(control_dir)
    return deb


def split_emulator(root, emu_root):
    """Moves the emulator plugin's files of the install in `root` to `emu_root`."""
    for d, _, files in os.walk(root):
        for f in files:
            if EMULATOR_FILES.match(f):
                src = os.path.join(d, f)
                dst = os.path.join(emu_root, os.path.relpath(src, root))
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                shutil.move(src, dst)


def make_debs(root, out_dir, work):
    """The driver's and the emulator's packages of the install in `root`
    (copied first: `root` stays as it is)."""
    driver, emulator = os.path.join(work, "driver"), os.path.join(work, "emulator")
    shutil.copytree(root, driver, symlinks=True, ignore=shutil.ignore_patterns("deb", "scratch-root"))
    os.makedirs(emulator)
    split_emulator(driver, emulator)
    version = project_version()
    return [make_deb(driver, out_dir, NAME),
            make_deb(emulator, out_dir, EMULATOR, [f"{NAME} (= {version})"])]


def clean_build(sdk, work):
    """HEAD as committed, built and installed into work/root."""
    src, build, root = (os.path.join(work, d) for d in ("src", "build", "root"))
    os.makedirs(src)
    archive = subprocess.Popen(["git", "-C", TOP, "archive", "--format=tar", "HEAD"],
                               stdout=subprocess.PIPE)
    run(["tar", "-x", "-C", src], stdin=archive.stdout)
    if archive.wait() != 0:
        raise SystemExit("package: git archive HEAD failed")
    run(["meson", "setup", build, src, "--prefix=/usr", "--buildtype=release",
         "-Dtests=false", "-Dbenchmarks=false", f"-Ddpdk_sdk_dir={sdk}"], stdout=subprocess.DEVNULL)
    run(["ninja", "-C", build], stdout=subprocess.DEVNULL)
    run(["meson", "install", "-C", build, "--destdir", root, "--strip", "--quiet"])
    return root


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sdk", help="DPDK driver-SDK headers (tools/setup prints them)")
    ap.add_argument("--destdir")
    ap.add_argument("--out", default=os.path.join(TOP, "out", "package"))
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="mlx5async-package-") as work:
        if a.destdir:
            debs = make_debs(a.destdir, a.out, work)
        elif not a.sdk:
            sys.exit("package: --sdk DIR (tools/setup prints it) or --destdir D")
        else:
            debs = make_debs(clean_build(a.sdk, work), a.out, work)
    print("\n".join(debs))


if __name__ == "__main__":
    main()
