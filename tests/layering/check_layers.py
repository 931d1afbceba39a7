#!/usr/bin/env python3
"""The layering of doc/architecture.md, checked on the sources: each layer
includes only the layers below it, the DPDK-free layers include no DPDK
header, and no part of the driver (the device core, the PMD glue) includes
the emulator: it is a plugin the core loads at run time (core/backend.cpp).

  check_layers.py SOURCE_ROOT
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')
# Where the project's headers are found by a quoted include: the layers, and
# the public APIs (the driver's and the emulator's, installed apart).
PROJECT_INCLUDE_DIRS = ("drivers", "include/mlx5async", "include/mlx5emu")
DPDK = re.compile(r'^(rte_|vdpa_driver\.h|bus_|ethdev_)')

# folder -> (project folders it may include from, whether DPDK headers are allowed)
LAYERS = {
    "drivers/common/base": (["common/base"], False),
    "drivers/common/prm": (["common/base", "common/prm"], False),
    "drivers/common/devx": (["common/base", "common/prm", "common/devx"], False),
    "drivers/emu": (["common/base", "common/prm", "common/devx", "emu", "mlx5emu.h"], False),
    "drivers/vdpa/mlx5async/core": (["common", "vdpa/mlx5async/core"], False),
    "drivers/vdpa/mlx5async": (["common", "vdpa/mlx5async", "rte_pmd_mlx5async.h"], True),
}


def layer_of(rel):
    best = None
    for folder in LAYERS:
        if rel.startswith(folder + "/") and (best is None or len(folder) > len(best)):
            best = folder
    return best


def check(root):
    bad = []
    checked = 0
    for folder in LAYERS:
        for dirpath, _, names in os.walk(os.path.join(root, folder)):
            for n in names:
                if not n.endswith((".cpp", ".hpp", ".h", ".c")):
                    continue
                path = os.path.join(dirpath, n)
                rel = os.path.relpath(path, root)
                layer = layer_of(rel)
                if layer != folder:
                    continue
                checked += 1
                allowed, dpdk_ok = LAYERS[layer]
                here = os.path.dirname(path)
                with open(path, encoding="utf-8") as f:
                    for lineno, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        inc = m.group(1)
                        where = f"{rel}:{lineno}: #include {inc}"
                        if DPDK.match(inc):
                            if not dpdk_ok:
                                bad.append(f"{where}: a DPDK header in a DPDK-free layer")
                            continue
                        if "/" not in inc and os.path.exists(os.path.join(here, inc)):
                            continue  # its own folder
                        if not any(os.path.exists(os.path.join(root, d, inc)) for d in PROJECT_INCLUDE_DIRS):
                            continue  # a system or generated header
                        if not any(inc == a or inc.startswith(a + "/") for a in allowed):
                            bad.append(f"{where}: {layer} may include only {', '.join(allowed)}")
    return checked, bad


def main():
    root = sys.argv[1]
    checked, bad = check(root)
    for b in bad:
        print(b)
    if checked < 50:
        print(f"only {checked} files found under {root}: wrong source root?")
        return 1
    print(f"layering: {checked} files, {len(bad)} violations")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
