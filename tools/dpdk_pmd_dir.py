#!/usr/bin/env python3
"""Prints the folder the installed DPDK's EAL scans for driver plugins at
start (RTE_EAL_PMD_PATH, compiled into librte_eal), read from the library
itself: Debian 12's is /usr/lib/x86_64-linux-gnu/dpdk/pmds-23.0.

  dpdk_pmd_dir.py LIBDIR     LIBDIR: where librte_eal.so is (pkg-config
                             --variable=libdir libdpdk)
Exit 1, printing nothing, when no such folder is compiled in."""
import glob
import os
import re
import sys


def main(libdir):
    for lib in sorted(glob.glob(os.path.join(libdir, "librte_eal.so*"))):
        with open(os.path.realpath(lib), "rb") as f:
            data = f.read()
        # A NUL-terminated absolute path ending in pmds-<ABI>.
        for m in re.finditer(rb"(/[\x21-\x7e]*/pmds-[0-9]+\.[0-9]+)\x00", data):
            print(m.group(1).decode())
            return 0
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
