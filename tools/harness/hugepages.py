"""2 MiB hugepages for migration runs: a number of pages reserved on top of
what the system already has, and a private hugetlbfs mount limited to them,
both given back at close (the production shape of vhost-user guests: QEMU's
RAM on hugetlbfs, and DPDK on hugepages). Without a mount, the pages are
only reserved, for processes that map hugepages without hugetlbfs (DPDK's
--in-memory, as OVS runs it). Needs root."""
import os
import subprocess

PAGES_DIR = "/sys/kernel/mm/hugepages/hugepages-2048kB"
PAGE = 2 << 20


def _read(name):
    with open(os.path.join(PAGES_DIR, name)) as f:
        return int(f.read())


def _write_nr(n):
    with open(os.path.join(PAGES_DIR, "nr_hugepages"), "w") as f:
        f.write(str(n))


class Hugepages:
    """`pages` more 2 MiB pages in the pool, and `mount` (a new folder) a
    hugetlbfs of exactly that size (mount None: none). Use as a context
    manager."""

    def __init__(self, mount, pages):
        self.mount, self.pages = mount, pages
        self.before = None
        self.mounted = False

    def __enter__(self):
        if os.geteuid() != 0:
            raise AssertionError("hugepage runs need root: they reserve 2 MiB pages "
                                 f"({PAGES_DIR}/nr_hugepages) and mount hugetlbfs")
        if not os.path.isdir(PAGES_DIR):
            raise AssertionError(f"no 2 MiB hugepages on this kernel ({PAGES_DIR})")
        self.before = _read("nr_hugepages")
        free_before = _read("free_hugepages")
        _write_nr(self.before + self.pages)
        got = _read("free_hugepages") - free_before
        if got < self.pages:
            self.close()
            raise AssertionError(f"reserved {got} of {self.pages} 2 MiB hugepages (memory too "
                                 "fragmented or too small); nothing left reserved")
        if self.mount is None:
            return self
        os.makedirs(self.mount, exist_ok=True)
        subprocess.run(["mount", "-t", "hugetlbfs", "-o", f"pagesize=2M,size={self.pages * PAGE},mode=0700",
                        "mlx5a-hugetlbfs", self.mount], check=True)
        self.mounted = True
        return self

    def used(self):
        """Pages of the mount in use now (files mapped by the guests and the
        hosts' EAL, unlinked ones included)."""
        st = os.statvfs(self.mount)
        return st.f_blocks - st.f_bfree

    def close(self):
        """Unmounts (files of killed processes go with it) and gives the
        pages back."""
        if self.mounted:
            if subprocess.run(["umount", self.mount]).returncode != 0:
                subprocess.run(["umount", "-l", self.mount])
            self.mounted = False
        if self.before is not None:
            _write_nr(self.before)
            self.before = None

    def __exit__(self, *exc):
        self.close()
        return False
