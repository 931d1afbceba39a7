#!/usr/bin/python3
"""Interrupts end to end (event_mode=irq, the default): the emulated device
raises an interrupt through each virtq's event QP, the PMD's relay writes the
ring's callfd, tools/vhost-user-guest counts the eventfd signals. Properties:
every ring that got used buffers was signalled; the guest's count equals the
PMD's callfd writes ring by ring; VRING_AVAIL_F_NO_INTERRUPT silences a ring
while its packets still flow; interrupts survive suspend/resume and a
reconnect (new callfds); event_mode=none signals nothing.

usage: test_irq.py CASE --host VDPA_HOST --guest VHOST_USER_GUEST
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(HERE))), "tools"))
from harness.cases import run_case  # noqa: E402
from harness.frontend import VhostUserGuest  # noqa: E402
from harness.host import HostSession  # noqa: E402
from harness.proc import unique  # noqa: E402
from harness.wait import until  # noqa: E402
from test_guest import FAST, PAIRS, RDY, RINGS, SUSPEND, check_stopped, wait_states  # noqa: E402

PKTS = 8


def session(args, extra=""):
    vdev = f"vdpa_mlx5async0,emu=cx7,queues={PAIRS},queue_size=256,{FAST}{extra}"
    return HostSession(args.host, vdev, prefix=unique("irq-host"))


def traffic(g, pairs, n=PKTS):
    """n packets on each pair: RX buffers on ring 2k, packets on 2k+1, a
    kick; returns once every ring's used index moved by n (polled, so the
    wait itself does not depend on interrupts)."""
    want = {}
    for k in pairs:
        for ring in (2 * k, 2 * k + 1):
            want[ring] = (g.cmd(f"used {ring}")["used_idx"] + n) % 65536
        assert g.cmd(f"post-rx {2 * k} {n}")["posted"] == n
        assert g.cmd(f"post-tx {2 * k + 1} {n} 64")["posted"] == n
        g.cmd(f"kick {2 * k + 1}")
    for ring, idx in want.items():
        r = g.cmd(f"wait-used {ring} {idx} 20000", timeout=30)
        assert r["reached"], (ring, idx, r)


def host_irqs(host):
    return {v["index"]: v["interrupts"] for v in host.cmd("info")["vqs"]}


def settle(g, host, timeout=20):
    """The guest's interrupt counts once it has seen every callfd write the
    PMD made (the relay writes after the device wrote used entries: a short
    lag)."""
    got, _ = until(lambda: (g.cmd("irqs")["irqs"], host_irqs(host)),
                   lambda gs: all(gs[0][i] == gs[1].get(i, 0) for i in range(RINGS)), timeout,
                   "guest interrupt counts equal to the PMD's callfd writes",
                   describe=lambda gs: f"guest saw {gs[0]}, PMD wrote {gs[1]}")
    return got


def case_interrupts(args):
    with session(args) as s:
        host = s.host
        g = s.track(VhostUserGuest(args.guest, s.sock, PAIRS))
        g.cmd("start")
        assert host.cmd("wait-ready 32 60", timeout=90)["rdy"] == RINGS
        tel = host.cmd("info")
        assert all(v["interrupts"] == 0 for v in tel["vqs"]), tel  # idle: nothing raised

        # 1. Every pair moves packets: both rings of each pair are signalled,
        # and the guest's counts equal the PMD's callfd writes ring by ring.
        traffic(g, range(PAIRS))
        got = settle(g, host)
        assert all(c >= 1 for c in got), got
        # Interrupts coalesce (one eventfd write may stand for several used
        # buffers) but never exceed the buffers completed.
        assert all(c <= PKTS for c in got), got
        print(f"interrupts per ring after {PKTS} packets on every pair: {got}")

        # 2. NO_INTERRUPT on every ring: packets still flow, no signal. The
        # marker: ring 0 wants interrupts again and gets one more packet; the
        # device decides its passes in order and the relay writes callfds in
        # order, so once the marker's interrupt arrived every earlier pass
        # was decided. Ring 0 may also be signalled for its last silent pass
        # (the device reads avail->flags after the used index, as the spec
        # says, and the guest cleared the flag right after seeing it).
        g.cmd("no-irq all on")
        before = settle(g, host)
        traffic(g, range(PAIRS))
        g.cmd("no-irq 0 off")
        traffic(g, [0], n=1)
        r = g.cmd(f"wait-irq 0 {before[0] + 1} 20000", timeout=30)
        assert r["reached"], r
        after = settle(g, host)
        assert before[0] + 1 <= after[0] <= before[0] + 2, (before[0], after[0])
        assert after[1:] == before[1:], (before, after)
        g.cmd("no-irq all on")
        before = settle(g, host)

        # 3. Back on; only the rings that move are signalled.
        g.cmd("no-irq all off")
        traffic(g, [3])
        after = settle(g, host)
        moved = {6, 7}
        for i in range(RINGS):
            if i in moved:
                assert after[i] > before[i], (i, before, after)
            else:
                assert after[i] == before[i], (i, before, after)

        # 4. Suspend all, post while suspended, resume: the held kick replays
        # and the interrupt follows (the event QPs stay across suspend).
        assert host.cmd("suspend")["rc"] == 0
        wait_states(host, {i: SUSPEND for i in range(RINGS)})
        base = g.cmd("irqs")["irqs"]
        assert g.cmd("post-rx 8 4")["posted"] == 4
        assert g.cmd("post-tx 9 4 64")["posted"] == 4
        g.cmd("kick 9")
        assert host.cmd("resume")["rc"] == 0
        wait_states(host, {i: RDY for i in range(RINGS)})
        r = g.cmd(f"wait-irq 8 {base[8] + 1} 20000", timeout=30)
        assert r["reached"], r
        r = g.cmd(f"wait-irq 9 {base[9] + 1} 20000", timeout=30)
        assert r["reached"], r

        # 5. Reconnect: the new session's callfds get the interrupts.
        check_stopped(host, g.cmd("stop")["bases"])
        g.cmd("reconnect")
        g.cmd("start")
        assert host.cmd("wait-ready 32 60", timeout=90)["rdy"] == RINGS
        before = settle(g, host)
        traffic(g, [0, 15])
        after = settle(g, host)
        for i in (0, 1, 30, 31):
            assert after[i] > before[i], (i, before, after)
        g.quit()


def case_no_interrupts(args):
    """event_mode=none: the virtqs raise nothing (NO_MSIX); polling frontends
    still get their packets."""
    with session(args, ",event_mode=none") as s:
        host = s.host
        g = s.track(VhostUserGuest(args.guest, s.sock, PAIRS))
        g.cmd("start")
        assert host.cmd("wait-ready 32 60", timeout=90)["rdy"] == RINGS
        # No event QP exists: nothing can signal (no waiting for nothing).
        assert host.cmd("info")["interrupts"] == 0
        traffic(g, range(4))
        assert g.cmd("irqs")["total"] == 0
        assert all(v["interrupts"] == 0 for v in host.cmd("info")["vqs"])
        g.quit()


CASES = {"interrupts": case_interrupts, "no-interrupts": case_no_interrupts}

if __name__ == "__main__":
    run_case(CASES, ("--host", {"required": True}), ("--guest", {"required": True}))
