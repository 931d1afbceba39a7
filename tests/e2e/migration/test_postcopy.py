#!/usr/bin/env python3
"""Postcopy under the real hypervisor: a vDPA device cannot serve page
faults (its DMA writes guest pages that may not have arrived), so the
driver offers no VHOST_USER_PROTOCOL_F_PAGEFAULT. Asked for postcopy-ram,
the destination QEMU refuses it, naming its vhost-user backend; the source
VM runs on untouched, and a precopy migration to a new destination then
completes with every check of the migration suite.

  test_postcopy.py refused --app vdpa-testpmd --guest-dir .cache/guest
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from test_migration import (bed_of, check_announce, check_bases, check_clean,  # noqa: E402
                            check_destination_traffic, check_ledgers, check_traffic,
                            require_qemu_and_guest)
from harness import qemu  # noqa: E402  (test_migration put tools/ on the path)
from harness.cases import run_case  # noqa: E402
from harness.migration import vdev  # noqa: E402

QP = 2


def case_refused(a):
    with bed_of(a, QP) as bed:
        src = bed.host("src", vdev(QP, "async"))
        dst = bed.host("dst", vdev(QP, "async"))
        vm = bed.boot(src)
        check_traffic(vm, 2)
        src_mark, dst_mark = src.mark(), dst.mark()
        before = src.ledger()
        try:
            bed.begin(vm, dst, postcopy=True)
        except qemu.QmpError as e:
            refusal = str(e)
        else:
            raise AssertionError("the destination QEMU took postcopy-ram over a vDPA device")
        assert "migrate-set-capabilities" in refusal and "ostcopy" in refusal, refusal
        said = "\n".join(bed.vms[-1].qemu_messages())
        assert "vhost-user backend not capable of postcopy" in said, said[-2000:]
        # Nothing reached the source: no stop, no dirty logging; it runs on.
        assert src.ledger()["stop_seq"] == before["stop_seq"], src.ledger()
        assert not [l for l in src.output()[src_mark:] if "dirty logging on" in l]
        check_traffic(vm, 2)
        assert not src.bad_lines(src_mark) and not dst.bad_lines(dst_mark), \
            src.bad_lines(src_mark) + dst.bad_lines(dst_mark)
        bed.vms[-1].kill()
        # Precopy to a new destination: the migration suite's checks.
        dst2 = bed.host("dst2", vdev(QP, "async"))
        m = bed.migrate(vm, src, dst2)
        check_destination_traffic(m)
        check_bases(m, 2 * QP)
        check_ledgers(m, 2 * QP)
        check_announce(m)
        check_clean(m)
        print(f"postcopy refused ({refusal}); precopy then migrated: downtime {m.downtime_ms():.0f} ms")


CASES = {"refused": case_refused}

if __name__ == "__main__":
    run_case(CASES, ("--app", {"required": True}), ("--guest-dir", {"required": True}),
             ("--qemu", {"default": qemu.QEMU}), ("--pmd", {"default": None}),
             prepare=require_qemu_and_guest)
