#!/usr/bin/env python3
"""Firmware faults during a real QEMU live migration. Each cell arms one
fault rule on one command of the source's stop (the SUSPEND or the QUERY
of virtq 2, armed once the pre-copy's dirty logging is on) or of the
destination's start (its first umem registration, first mkey, a CREATE,
virtq 2's MODIFY to RDY), each fault once: refused with a status, EBUSY, a
hang (until the emulated kernel's command timeout) or an answer after the
batch's deadline. QEMU 7.2 cannot fail a migration for its vhost-user
backend (a source's GET_VRING_BASE answer and a destination's dev_conf
carry no error), so the driver must end every cell in the first outcome:
the migration completes with both guests' RAM identical page for page,
the destination runs from the indexes the source device stopped at (the
bases on the wire equal the suspended device's), every pair carries
traffic and the guest is announced. The fault is reported once, naming the
command, the virtq and the status (an async QUERY's EBUSY is requeued by
the engine and a late umem registration, a blocking kernel verb, waited
for: no failure), and the recovery said in one line.

  test_faults.py matrix --app vdpa-testpmd --guest-dir .cache/guest [--side src|dst] [--summary JSON]
"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from test_migration import (SOURCE_EXPECTED, HOST_EXPECTED, bed_of, check_announce,  # noqa: E402
                            check_bases, check_destination_traffic, check_device_announce,
                            check_ram, check_traffic, require_qemu_and_guest)
from harness import qemu  # noqa: E402  (test_migration put tools/ on the path)
from harness.cases import run_case  # noqa: E402
import measured  # noqa: E402  (tools/, as the harness)

QP = 2
DEVICE = "vdpa_mlx5async0"
# No virtqs made at probe (no queues=): a destination's start CREATEs them.
# The emulated kernel fails a hung command after 4 s, beyond the batch's
# 2 s deadline, as mlx5_core's 60 s lie beyond it.
HOST_VDEV = f"{DEVICE},emu=cx7,strategy=async,emu_cmd_timeout_ms=4000"

# command -> (side, fault-rule match, what the engine's line names)
COMMANDS = {
    "SUSPEND": ("src", "op=modify vq=2 nth=1", r"MODIFY_GENERAL_OBJECT obj 0x[0-9a-f]+ queue 2"),
    "QUERY": ("src", "op=query vq=2 nth=1", r"QUERY_GENERAL_OBJECT obj 0x[0-9a-f]+ queue 2"),
    "umem": ("dst", "op=create_umem nth=1", r"CREATE_UMEM"),
    "mkey": ("dst", "op=create_mkey nth=1", r"CREATE_MKEY"),
    "CREATE": ("dst", "op=create nth=3", r"CREATE_GENERAL_OBJECT"),
    "MODIFY to RDY": ("dst", "op=modify vq=2 nth=1", r"MODIFY_GENERAL_OBJECT obj 0x[0-9a-f]+ queue 2"),
}
# fault -> (rule action, what the engine's line says)
FAULTS = {
    # A umem registration is a kernel verb: the status arrives as mlx5_core
    # maps it (BAD_SYS_STATE: EIO).
    "status": ("status=0x4 syndrome=0x5a5a", r"\(0x4\) syndrome 0x5a5a|errno 5$"),
    "busy": ("busy", r"errno 16|busy"),
    # A hung blocking command (umem registration, CREATE_MKEY) waits in
    # the kernel until its command timeout fails it: ETIMEDOUT, or the
    # status the emulated kernel gives a timed-out mailbox (INT_ERR).
    "hang": ("hang", r"no answer before the deadline|errno 110$|INT_ERR \(0x1\)"),
    "late": ("answer_late_us=8000000", r"no answer before the deadline"),
}
# The recovery's own lines, and what the engine says of late commands.
RECOVERY = [r"stop: \d+ of \d+ virtqs not stopped by the first suspend .*; (\d+) of them stopped on the second round",
            r"start attempt \d+ of \d+ failed .*: trying again", r"started on attempt \d+",
            r"firmware commands outlived their batch's deadline"]


def arm(host, rule):
    mark = host.mark()
    host.send(f"fault {DEVICE} {rule}")
    host.wait_line(lambda l: "fault rule" in l, 30, f"answer to 'fault {rule}'", since=mark)
    said = [l for l in host.output()[mark:] if "fault rule" in l]
    assert "set" in said[-1], said


def fault_lines(host, since, names, says):
    """The host's error and warning lines since `since` that name the
    faulted command and say the fault."""
    return [l for l in host.bad_lines(since) if re.search(names, l) and re.search(says, l) and
            not any(re.search(x, l) for x in RECOVERY)]


def one_cell(bed, vm, src, index, command, fault):
    side, match, names = COMMANDS[command]
    action, says = FAULTS[fault]
    dst = bed.host(f"d{index}", HOST_VDEV, interactive=True)
    rule = f"{match} {action}"
    if side == "dst":
        arm(dst, rule)
    m = bed.start(vm, src, dst, paused=True)
    if side == "src":
        # The next MODIFY of virtq 2 after the log's is the stop's SUSPEND.
        src.wait_line(lambda l: "dirty logging on" in l, 120, "dirty logging on", since=m.src_mark)
        arm(src, rule)
    bed.finish(m)
    assert src.ledger()["stop_seq"] > m.src_before[0]["stop_seq"], "the source device never stopped"
    check_ram(bed, m)
    bed.resume(m)
    check_destination_traffic(m)
    check_bases(m, 2 * QP)
    check_announce(m)
    check_device_announce(m)
    host, mark = (src, m.src_mark) if side == "src" else (dst, m.dst_mark)
    hits = fault_lines(host, mark, names, says)
    # An async QUERY's EBUSY is no failure: the engine requeues it; a late
    # umem registration (a blocking kernel verb) is waited for, the start
    # that much later.
    reports = 0 if (command, fault) in (("QUERY", "busy"), ("umem", "late")) else 1
    assert len(hits) == reports, \
        f"{command} {fault}: the fault reported {len(hits)} times, not {reports}:\n" + "\n".join(hits)
    recovered = [l for l in host.output()[mark:] if any(re.search(x, l) for x in RECOVERY[:3])]
    # The recovery each cell needs (doc/testing.md's table): the stop's
    # second round, or the start's second attempt.
    if reports == 0:
        want = None
    elif side == "src":
        want = r"not stopped by the first suspend .*; 1 of them stopped on the second round"
    else:
        want = r"started on attempt 2$"
    said = [l for l in recovered if want and re.search(want, l)]
    assert (len(said) == 1) if want else not recovered, \
        f"{command} {fault}: recovery lines {recovered}, expected one matching {want}"
    # Lines neither the fault's, the recovery's nor expected of a migration.
    faulted = RECOVERY + [re.escape(h) for h in hits]
    bad = src.bad_lines(m.src_mark, SOURCE_EXPECTED + (faulted if side == "src" else [])) + \
        dst.bad_lines(m.dst_mark, HOST_EXPECTED + (faulted if side == "dst" else []))
    # A hung or late command's own completion, after its batch gave up on it.
    bad = [l for l in bad if not re.search(names, l)]
    assert not bad, f"{command} {fault}: other error lines:\n" + "\n".join(bad)
    recovery = recovered[-1].split(": ", 2)[-1] if recovered else "no retry needed"
    print(f"{side} {command:<13} {fault:<6}: completed, RAM identical, {2 * QP} rings' bases "
          f"handed over, traffic and announce on the destination; {recovery}", flush=True)
    vm.terminate()  # the source QEMU quits, as after a real migration
    assert src.stop() == 0, f"{src.name}: vdpa-testpmd failed"
    row = [side, command, fault, len(hits), recovery]
    return m.dst_vm, dst, row


def table(rows):
    """The matrix as Markdown: one row per cell, as the run ended it."""
    out = ["| side | command | fault | reported | recovery |", "|---|---|---|---:|---|"]
    out += [f"| {' | '.join(str(c) for c in r)} |" for r in rows]
    return "\n".join(out) + (f"\n\nEvery cell: the migration completed, both guests' RAM identical, "
                             f"the {2 * QP} rings' bases handed over, traffic and the announce on the "
                             f"destination. \"reported\": the fault's error lines (the command, the "
                             f"virtq and the status, once).")


def case_matrix(a):
    with bed_of(a, QP) as bed:
        src = bed.host("d0", HOST_VDEV, interactive=True)
        vm = bed.boot(src)
        check_traffic(vm, 2)
        rows = []
        for command in [c for c in COMMANDS if a.side in ("both", COMMANDS[c][0])]:
            for fault in FAULTS:
                vm, src, row = one_cell(bed, vm, src, len(rows) + 1, command, fault)
                rows.append(row)
        print(f"fault matrix: {len(rows)} cells, every migration completed and recovered")
        if a.summary:
            measured.write_summary(a.summary, "./run faults" + (f" --side {a.side}" if a.side != "both" else ""),
                                   table(rows))


CASES = {"matrix": case_matrix}

if __name__ == "__main__":
    run_case(CASES, ("--app", {"required": True}), ("--guest-dir", {"required": True}),
             ("--qemu", {"default": qemu.QEMU}), ("--pmd", {"default": None}),
             ("--side", {"default": "both", "choices": ("both", "src", "dst")}),
             ("--summary", {"default": None, "help": "write the matrix to this summary.json (./run faults)"}),
             prepare=require_qemu_and_guest)
