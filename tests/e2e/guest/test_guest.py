#!/usr/bin/python3
"""EAL-level tests of the PMD with tools/vhost-user-guest as the frontend:
16 queue pairs (32 virtqs, more than DPDK's virtio_user takes), QEMU's
stop sequence (SET_STATUS(0) + GET_VRING_BASE per ring), its migration
destination order, ring enable/disable storms and the dirty log.

usage: test_guest.py CASE --host VDPA_HOST --guest VHOST_USER_GUEST
"""
import os
import socket
import struct
import sys

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(TOP, "tools"))
from harness import vhost_user as vu  # noqa: E402
from harness.cases import run_case  # noqa: E402
from harness.frontend import VhostUserGuest  # noqa: E402
from harness.host import HostSession, vdpa_host  # noqa: E402
from harness.proc import Workdir, fd_targets, unique  # noqa: E402
from harness.wait import until  # noqa: E402

# Low emulated latencies keep the tests quick; the control path is the same.
FAST = "emu_modify_us=20,emu_query_us=30,emu_create_us=20,emu_destroy_us=20,emu_umem_us=5"
PAIRS = 16
RINGS = 2 * PAIRS
RDY, SUSPEND = 1, 2


VDEV = f"vdpa_mlx5async0,emu=cx7,queues={PAIRS},queue_size=256,{FAST}"


def make_host(args, wd):
    sock = wd.file("vhost.sock")
    host = vdpa_host(args.host, VDEV, sock, unique("guest-host"), log_path=wd.file(unique("host") + ".log"))
    return host, sock


def guest_session(args):
    """The host every case but `errors` and `restart` uses; HostSession cleans up."""
    return HostSession(args.host, VDEV, prefix=unique("guest-host"))


def vq_states(info):
    return {v["index"]: v["state"] for v in info["vqs"]}


def wait_states(host, want, timeout=30):
    """`info` once every virtq index in want has that state."""
    def reached(info):
        states = vq_states(info)
        return all(states.get(i) == s for i, s in want.items())
    return until(lambda: host.cmd("info"), reached, timeout, f"virtq states {want}", describe=vq_states)


def check_stopped(host, bases):
    """After a stop: every virtq suspended, its hardware indexes the ones the
    frontend got back from GET_VRING_BASE, no errors."""
    info = host.cmd("info")
    vqs = {v["index"]: v for v in info["vqs"]}
    assert len(vqs) == RINGS, info
    for i in range(RINGS):
        v = vqs[i]
        assert v["state"] == SUSPEND, (i, v)
        assert v["avail"] == bases[i], (i, v, bases[i])
        assert v["errors"] == 0, (i, v)
    return vqs


def no_base_mismatch(host):
    """DPDK's vhost overrides SET_VRING_BASE with the used index it finds in
    guest memory when they differ (and says so): the frontend's bases must
    agree with its rings."""
    host.cmd("info")  # every line logged before this answer is in the output
    bad = [l for l in host.output() if "mismatches" in l]
    assert not bad, bad[:5]


def case_reconnect(args):
    """32 virtqs up and down through 3 reconnects, each ring at its own index;
    the bases returned by GET_VRING_BASE are the device's indexes and carry
    over into the next session. Round 1 uses QEMU's destination order, round
    2 posts buffers before stopping; a last start reuses the session."""
    with guest_session(args) as s:
        host, sock = s.host, s.sock
        g = s.track(VhostUserGuest(args.guest, sock, PAIRS))
        expect = None
        for rnd in range(4):
            if rnd > 0:
                assert g.cmd("reconnect")["connections"] == rnd + 1
            if rnd < 3:
                # A fresh index per ring and round (ring 0 near the wrap).
                expect = [(65530 + rnd) % 65536 if i == 0 else (i * 1000 + rnd * 17) % 65536
                          for i in range(RINGS)]
                for i, b in enumerate(expect):
                    g.cmd(f"base {i} {b}")
            # else: the last round restarts from the bases of the last stop.
            r = g.cmd("start dst" if rnd == 1 else "start")
            assert r["rings"] == RINGS and r["enabled"] == RINGS, r
            assert int(r["features"], 16) >> 32 & 1, r  # VERSION_1
            assert host.cmd("wait-ready 32 60", timeout=90)["rdy"] == RINGS
            info = host.cmd("info")
            assert info["vid"] >= 0, info
            for v in info["vqs"]:
                assert v["state"] == RDY and v["avail"] == expect[v["index"]], (rnd, v)
            if rnd == 2:
                assert g.cmd("post-tx 1 8 64")["posted"] == 8  # virtio-net: ring 2k+1 transmits
                assert g.cmd("post-rx 0 8")["posted"] == 8  # ring 2k receives
                # The emulated datapath loops them back once kicked; wait for
                # it, so no chain is left for the next session's device to take.
                g.cmd("kick 1")
                r = g.cmd(f"wait-used 1 {(expect[1] + 8) % 65536} 20000", timeout=30)
                assert r["reached"], r
            bases = g.cmd("stop")["bases"]
            assert len(bases) == RINGS, bases
            vqs = check_stopped(host, bases)
            if rnd == 2:
                # Whatever the device consumed, the guest sees the device's used
                # index and the frontend got its avail index back.
                for ring in (0, 1):
                    u = g.cmd(f"used {ring}")
                    assert u["used_idx"] == vqs[ring]["used"], (u, vqs[ring])
                    assert u["avail_idx"] == (expect[ring] + 8) % 65536, u
                    assert 0 <= (bases[ring] - expect[ring]) % 65536 <= 8, (bases, expect)
                expect = bases
            else:
                assert bases == expect, (rnd, bases, expect)
        # Start again on the same session (QEMU resuming the VM after a
        # failed migration): same rings, same indexes.
        g.cmd("start")
        assert host.cmd("wait-ready 32 60", timeout=90)["rdy"] == RINGS
        assert g.cmd("stop")["bases"] == expect
        check_stopped(host, expect)
        g.quit()
        assert host.cmd("wait-vid 0 60", timeout=90)["ok"]
        info = host.cmd("info")
        assert {v["state"] for v in info["vqs"]} == {SUSPEND}, info
        no_base_mismatch(host)


def case_pairs(args):
    """A guest changing its queue-pair count: SET_VRING_ENABLE storms. The
    device runs exactly the enabled rings each time."""
    with guest_session(args) as s:
        host, sock = s.host, s.sock
        g = s.track(VhostUserGuest(args.guest, sock, PAIRS))
        g.cmd("start")
        assert host.cmd("wait-ready 32 60", timeout=90)["rdy"] == RINGS
        for n in (4, 16, 1, 16, 4, 16):
            assert g.cmd(f"pairs {n}")["enabled"] == 2 * n
            wait_states(host, {i: RDY if i < 2 * n else SUSPEND for i in range(RINGS)})
        # Single rings too: disable 5 and 30, enable them back.
        g.cmd("disable 5")
        g.cmd("disable 30")
        wait_states(host, {i: SUSPEND if i in (5, 30) else RDY for i in range(RINGS)})
        g.cmd("enable 5")
        g.cmd("enable 30")
        wait_states(host, {i: RDY for i in range(RINGS)})
        bases = g.cmd("stop")["bases"]
        check_stopped(host, bases)
        # The guest keeps its pair count across a new session: 4 pairs.
        g.cmd("pairs 4")
        g.cmd("reconnect")
        r = g.cmd("start")
        assert r["enabled"] == 8, r
        wait_states(host, {i: RDY if i < 8 else SUSPEND for i in range(RINGS)})
        g.cmd("pairs 16")
        assert host.cmd("wait-ready 32 60", timeout=90)["rdy"] == RINGS
        check_stopped(host, g.cmd("stop disable")["bases"])  # virtio_user's way
        no_base_mismatch(host)
        g.quit()


def pmd_said(host, text):
    """How many host output lines so far contain text (the PMD logs at info)."""
    host.cmd("info")
    return sum(text in l for l in host.output())


def case_log(args):
    """Dirty logging: log-on while running (SET_LOG_BASE, SET_FEATURES with
    LOG_ALL, SET_VRING_ADDR with the log flag) is accepted; the stop then
    logs exactly every ring's used ring dirty; with log-off nothing is logged."""
    with guest_session(args) as s:
        host, sock = s.host, s.sock
        g = s.track(VhostUserGuest(args.guest, sock, PAIRS))
        g.cmd("start")
        assert host.cmd("wait-ready 32 60", timeout=90)["rdy"] == RINGS
        r = g.cmd("log-on")
        assert int(r["features"], 16) >> 26 & 1, r
        assert r["log_bytes"] >= (64 << 20) // 4096 // 8, r  # 64 MiB at 4 KiB pages
        assert host.cmd("wait-ready 32 60", timeout=90)["rdy"] == RINGS  # still running
        assert pmd_said(host, "dirty logging on") == 1
        d = g.cmd("log-dirty")
        assert d["count"] == 0, d  # nothing moved yet
        check_stopped(host, g.cmd("stop")["bases"])
        d = g.cmd("log-dirty")
        assert d["used_rings_dirty"] == list(range(RINGS)), d
        assert d["count"] == RINGS, d  # one page per used ring (256 entries), nothing else
        # A new session (migration destination side) keeps logging on.
        g.cmd("log-clear")
        g.cmd("reconnect")
        r = g.cmd("start")
        assert int(r["features"], 16) >> 26 & 1, r
        assert host.cmd("wait-ready 32 60", timeout=90)["rdy"] == RINGS
        check_stopped(host, g.cmd("stop")["bases"])
        d = g.cmd("log-dirty")  # logged into the log of the new session
        assert d["used_rings_dirty"] == list(range(RINGS)) and d["count"] == RINGS, d
        g.cmd("log-clear")
        g.cmd("start")  # same session again (QEMU resuming after a failed migration)
        assert host.cmd("wait-ready 32 60", timeout=90)["rdy"] == RINGS
        r = g.cmd("log-off")
        assert not int(r["features"], 16) >> 26 & 1, r
        assert pmd_said(host, "dirty logging off") == 1
        check_stopped(host, g.cmd("stop")["bases"])
        d = g.cmd("log-dirty")
        assert d["count"] == 0, d  # logging off: the stop logs nothing
        no_base_mismatch(host)
        g.quit()


def case_errors(args):
    """Failures name the request and exit non-zero; the backend keeps
    serving the next frontend."""
    wd = Workdir()
    procs = []

    def start(sock, *extra):
        procs.append(VhostUserGuest(args.guest, sock, PAIRS, extra))
        return procs[-1]

    host = None
    try:
        missing = os.path.join(wd.path, "absent.sock")
        g = start(missing, "--script", "start;quit")
        assert g.wait(30) == 1
        g.read_until(lambda l: '"fatal":true' in l and
                     f"connect {missing}: No such file" in l, 10)
        # A socket nobody listens on: connection refused.
        refused = os.path.join(wd.path, "refused.sock")
        lone = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        lone.bind(refused)
        try:
            g = start(refused, "--script", "info;start;quit")
            assert g.wait(30) == 1
            g.read_until(lambda l: '"fatal":true' in l and "Connection refused" in l, 10)
        finally:
            lone.close()

        host, sock = make_host(args, wd)
        # The backend refuses a ring size that is not a power of 2: REPLY_ACK NACK.
        g = start(sock, "--script", "set-num 0 100;quit")
        assert g.wait(30) == 1
        g.read_until(lambda l: '"error":"SET_VRING_NUM: NACK' in l, 10)

        g = start(sock)
        r = g.cmd("bogus", ok=False)
        assert r["ok"] is False and "unknown command" in r["error"], r
        r = g.cmd("stop", ok=False)
        assert "not started" in r["error"], r
        r = g.cmd(f"pairs {PAIRS + 1}", ok=False)
        assert "expected 1..16" in r["error"], r
        g.cmd("start")
        assert host.cmd("wait-ready 32 60", timeout=90)["rdy"] == RINGS
        r = g.cmd("bad-desc 2")
        assert r["addr"] >= 64 << 20 and r["avail_idx"] == 1, r  # outside guest memory
        host.kill()  # the backend goes away under a running guest
        g.send("stop")
        r = g.reply(30)
        assert r["ok"] is False and r["fatal"] is True, r
        assert r["error"].startswith(("SET_STATUS: ", "GET_VRING_BASE: ")), r
        assert g.wait(30) == 1
    finally:
        for p in procs:
            p.kill()
        if host:
            host.kill()
        wd.close()


def case_restart(args):
    """The backend dies under a running guest (kill -9) and a new one starts
    on the same socket: a guest told to stay answers the broken request with
    an error, `reconnect` (retrying while the new host starts) opens a new
    session, and its rings run again from the bases of its last stop."""
    wd = Workdir()
    host = g = None
    try:
        host, sock = make_host(args, wd)
        g = VhostUserGuest(args.guest, sock, PAIRS, extra=["--stay"])
        g.cmd("start")
        assert host.cmd("wait-ready 32 60", timeout=90)["rdy"] == RINGS
        bases = g.cmd("stop")["bases"]
        g.cmd("start")
        assert host.cmd("wait-ready 32 60", timeout=90)["rdy"] == RINGS
        host.kill()
        r = g.cmd("stop", ok=False)
        assert r["ok"] is False and r["connected"] is False, r
        os.unlink(sock)  # the killed host's stale socket: the operator's (or vdpa-testpmd's) job
        g.send("reconnect 60000")  # the new host comes up meanwhile
        host, _ = make_host(args, wd)
        r = g.reply(90)
        assert r.get("ok") is True and r["connections"] == 2, r
        g.cmd("start")
        assert host.cmd("wait-ready 32 60", timeout=90)["rdy"] == RINGS
        info = host.cmd("info")
        for v in info["vqs"]:
            assert v["state"] == RDY and v["avail"] == bases[v["index"]], (v, bases)
        g.quit()
    finally:
        for p in (g, host):
            if p:
                p.kill()
        wd.close()


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def case_hostile_table(args):
    """Memory tables the device cannot register (two overlapping regions;
    a region at GPA 2^60, whose hole needs billions of KLM entries) are
    refused at dev_conf with one line naming the regions, within bounded
    memory; the host then serves the next frontend's valid table."""
    with guest_session(args) as s:
        host, sock = s.host, s.sock
        for gap, expect in ((-4096, "overlaps region 0"), (1 << 60, "KLM entries (chunks of")):
            extra = ["--regions", "2", "--region-gap", str(gap)]
            g = s.track(VhostUserGuest(args.guest, sock, PAIRS, extra=extra))
            g.cmd("start")
            refused = host.read_until(lambda l: "memory table refused" in l, 60)
            assert expect in refused, refused
            assert rss_bytes(host.p.pid) < 1 << 30, rss_bytes(host.p.pid)
            info = host.cmd("info")
            assert all(v["state"] != RDY for v in info["vqs"]), info
            g.quit()
            assert host.cmd("wait-vid 0 60", timeout=90)["ok"]
        g = s.track(VhostUserGuest(args.guest, sock, PAIRS))
        g.cmd("start")
        assert host.cmd("wait-ready 32 60", timeout=90)["rdy"] == RINGS
        g.quit()


def case_bad_rings(args):
    """A ring whose addresses the device cannot use (outside every region,
    or running past region 0's end; desc, avail or used) is refused by
    name at dev_conf, and every other ring starts: one rule, whatever
    vhost could or could not map of it."""
    with guest_session(args) as s:
        host, sock = s.host, s.sock
        for part, kind in (("desc", "outside"), ("avail", "straddle"), ("used", "outside"),
                           ("desc", "straddle")):
            g = s.track(VhostUserGuest(args.guest, sock, PAIRS))
            g.cmd(f"bad-addr 3 {part} {kind}")
            g.cmd("start")
            host.read_until(lambda l: "vring 3 refused" in l, 60)
            assert host.cmd(f"wait-ready {RINGS - 1} 60", timeout=90)["rdy"] == RINGS - 1
            st = vq_states(host.cmd("info"))
            assert st[3] != RDY, (part, kind, st)
            assert all(st[i] == RDY for i in range(RINGS) if i != 3), (part, kind, st)
            g.quit()
            assert host.cmd("wait-vid 0 60", timeout=90)["ok"]


def case_bad_guest(args):
    """A guest posts a transmit descriptor outside its memory: the device puts
    that virtq in ERR (OBJECT_CHANGE), the PMD re-creates it from the hardware
    indexes and restarts it; every other virtq keeps running; nothing crashes;
    the guest can still stop cleanly."""
    with guest_session(args) as s:
        host, sock = s.host, s.sock
        g = s.track(VhostUserGuest(args.guest, sock, PAIRS))
        g.cmd("start")
        assert host.cmd("wait-ready 32 60", timeout=90)["rdy"] == RINGS
        before = {v["index"]: v for v in host.cmd("info")["vqs"]}
        r = g.cmd("bad-desc 3")  # ring 3 transmits; the kick goes with it
        assert r["addr"] >= 64 << 20, r
        # The chain stays in the ring, so each restart meets it again: the PMD
        # re-creates the virtq (up to 3 times within its window), then leaves
        # it in ERR and says so. Either end is a report, never a crash.
        def settled(info):
            vq3 = next(v for v in info["vqs"] if v["index"] == 3)
            gave_up = vq3["state"] == 3 and pmd_said(host, "virtq 3: 4 errors within") >= 1
            return vq3["errors"] >= 1 and (vq3["state"] == RDY or gave_up)
        info = until(lambda: host.cmd("info"), settled, 30, "virtq 3 recovered or reported",
                     describe=lambda info: info["vqs"][3])
        vq3 = next(v for v in info["vqs"] if v["index"] == 3)
        assert pmd_said(host, "virtq 3 recovered") >= 1  # at least one restart happened
        assert vq3["obj"] != before[3]["obj"], (vq3, before[3])  # re-created
        assert vq3["avail"] == before[3]["avail"], vq3  # the bad chain was never consumed
        st = vq_states(info)
        assert all(st[i] == RDY for i in range(RINGS) if i != 3), st
        assert all(v["errors"] == 0 for v in info["vqs"] if v["index"] != 3), info
        # QEMU's stop still gets every ring's base: ring 3 its last known-good.
        bases = g.cmd("stop")["bases"]
        info = host.cmd("info")
        for v in info["vqs"]:
            if v["index"] != 3:
                assert v["state"] == SUSPEND and v["avail"] == bases[v["index"]], (v, bases)
        assert bases[3] == before[3]["avail"], bases
        g.quit()



def case_log_refused(args):
    """A log the device cannot log into is refused to the frontend, not
    acked: SET_FEATURES with LOG_ALL gets a NACK (REPLY_ACK) when the log's
    file is shorter than the size SET_LOG_BASE claims, or when the log
    covers less than the guest's memory; the device says why and logs
    nothing, and its rings run on. A good log after that is taken."""
    with guest_session(args) as s:
        host, sock = s.host, s.sock
        for n, shape in enumerate(("short", "small"), 1):
            g = s.track(VhostUserGuest(args.guest, sock, PAIRS))
            g.cmd("start")
            assert host.cmd("wait-ready 32 60", timeout=90)["rdy"] == RINGS
            r = g.cmd(f"log-on {shape}", ok=False)
            assert r.get("fatal") and r["error"].startswith("SET_FEATURES: NACK"), r
            assert g.wait(30) == 1
            assert pmd_said(host, "LOG_ALL refused") == n
            assert pmd_said(host, "dirty logging on") == 0
            assert host.cmd("wait-vid 0 60", timeout=90)["ok"]  # the frontend left
        g = s.track(VhostUserGuest(args.guest, sock, PAIRS))
        g.cmd("start")
        assert host.cmd("wait-ready 32 60", timeout=90)["rdy"] == RINGS
        g.cmd("log-on")
        assert pmd_said(host, "dirty logging on") == 1
        check_stopped(host, g.cmd("stop")["bases"])
        assert g.cmd("log-dirty")["used_rings_dirty"] == list(range(RINGS))
        g.quit()


def case_log_truncated(args):
    """A frontend cuts its vhost log's file to nothing under LOG_ALL, with
    traffic: the device's log writes fail (the emulator cannot pin pages; a
    ConnectX keeps them), the virtq goes to ERR and the host lives on; the
    stop still hands back every ring's indexes, and says why the used rings
    were not logged (vhost's mapping of the log would fault). The driver
    recovers the virtq (errors counts it)."""
    with guest_session(args) as s:
        host, sock = s.host, s.sock
        g = s.track(VhostUserGuest(args.guest, sock, PAIRS))
        g.cmd("start")
        assert host.cmd("wait-ready 32 60", timeout=90)["rdy"] == RINGS
        g.cmd("log-on")
        g.cmd("log-truncate")
        assert g.cmd("post-rx 0 4")["posted"] == 4 and g.cmd("post-tx 1 4 64")["posted"] == 4
        g.cmd("kick 1")
        # The device's writes were done; its log write faulted: ERR, then
        # the driver's recovery (errors counts it).
        until(lambda: host.cmd("info"), lambda i: any(v["errors"] for v in i["vqs"][:2]), 60,
              "a virtq of the pair in ERR")
        bases = g.cmd("stop")["bases"]
        assert len(bases) == RINGS, bases
        assert pmd_said(host, "used rings not logged") == 1
        assert host.alive(), "the host died"
        g.quit()

def case_second_frontend(args):
    """The device serves the frontend whose start (dev_conf) took it. One
    that only negotiated blocks nobody: a second one starts. A frontend
    refused while another is served keeps its ring enables: once the
    served one leaves, its next SET_STATUS starts every ring."""
    with guest_session(args) as s:
        host, sock = s.host, s.sock
        idle = s.track(VhostUserGuest(args.guest, sock, PAIRS))
        idle.cmd("features")
        b = s.track(VhostUserGuest(args.guest, sock, PAIRS))
        b.cmd("start")
        assert host.cmd("wait-ready 32 60", timeout=90)["rdy"] == RINGS
        assert b.cmd("post-tx 1 8 64")["posted"] == 8 and b.cmd("post-rx 0 8")["posted"] == 8
        b.cmd("kick 1")
        assert b.cmd("wait-used 0 8 20000")["reached"]
        check_stopped(host, b.cmd("stop")["bases"])
        # b is served and started; c's start is refused while b is there.
        b.cmd("start")
        assert host.cmd("wait-ready 32 60", timeout=90)["rdy"] == RINGS
        c = s.track(VhostUserGuest(args.guest, sock, PAIRS))
        c.cmd("start")
        assert pmd_said(host, "waits for it to leave") >= 1
        b.quit()
        idle.quit()
        c.cmd("status 15")  # DRIVER_OK again: vhost asks for dev_conf again
        assert host.cmd("wait-ready 32 60", timeout=90)["rdy"] == RINGS
        assert c.cmd("post-tx 1 4 64")["posted"] == 4 and c.cmd("post-rx 0 4")["posted"] == 4
        c.cmd("kick 1")
        assert c.cmd("wait-used 0 4 20000")["reached"]
        check_stopped(host, c.cmd("stop")["bases"])
        c.quit()

def held_memfds(host, name):
    """The host's fds of memfds called `name`."""
    return [n for n, t in fd_targets(host.pid).items() if t.startswith(f"/memfd:{name}")]


def case_short_memory(args):
    """A memory table with a region whose file is shorter than the range
    vhost maps is refused by name before vhost maps it (DPDK 22.11's vhost would read
    a ring's used index past the file's end at SET_VRING_KICK and die of
    SIGBUS), its fds closed; the connection goes on and a correct table
    after it is taken."""
    mib, page = 1 << 20, 4096
    with guest_session(args) as s:
        host = s.host
        c = vu.Conn(s.sock)
        fds = []
        try:
            def memfd(name, size):
                fd = os.memfd_create(name, os.MFD_CLOEXEC)
                os.ftruncate(fd, size)
                fds.append(fd)
                return fd
            ack = vu.VERSION | vu.FLAG_NEED_REPLY

            def acked(req, payload, fd_list):
                return struct.unpack("<Q", c.request(vu.REQ[req], payload, ack, fds=fd_list))[0]
            features = struct.unpack("<Q", c.request(vu.REQ["GET_FEATURES"]))[0]
            assert features >> vu.F_PROTOCOL_FEATURES & 1, hex(features)
            c.request(vu.REQ["SET_FEATURES"], struct.pack("<Q", 1 << vu.VIRTIO_F["VERSION_1"] |
                                                          1 << vu.F_PROTOCOL_FEATURES), reply=False)
            c.request(vu.REQ["GET_PROTOCOL_FEATURES"])
            proto = 1 << vu.PROTO["REPLY_ACK"] | 1 << vu.PROTO["LOG_SHMFD"]
            c.request(vu.REQ["SET_PROTOCOL_FEATURES"], struct.pack("<Q", proto), reply=False)
            c.request(vu.REQ["SET_OWNER"], reply=False)
            uva = 0x7f0000000000
            table = vu.mem_table([(0, mib, uva, 0)])
            assert acked("SET_MEM_TABLE", table, [memfd("short-table", page - 1)]) == 1
            assert pmd_said(host, "SET_MEM_TABLE: region 0 (guest address 0, 1048576 bytes)") == 1
            assert pmd_said(host, "4095 bytes") == 1
            # vhost holds no table: a ring cannot be placed (had it mapped
            # the short one, its kick would read the used index past the end).
            c.request(vu.REQ["SET_VRING_NUM"], struct.pack(vu.LAYOUT["state"], 0, 256), reply=False)
            ring0 = struct.pack(vu.LAYOUT["addr"], 0, 0, uva, uva + 2 * page, uva + page, 0)
            assert acked("SET_VRING_ADDR", ring0, []) == 1
            for fd in fds:  # the host's copies are the only ones left
                os.close(fd)
            fds.clear()
            assert host.alive(), "the host died"
            assert held_memfds(host, "short-") == [], "the refused message's fds are still held"
            assert acked("SET_MEM_TABLE", table, [memfd("full-table", mib)]) == 0
            assert acked("SET_VRING_ADDR", ring0, []) == 0
            kick = os.eventfd(0, os.EFD_CLOEXEC | os.EFD_NONBLOCK)
            fds.append(kick)
            c.send(vu.header(vu.REQ["SET_VRING_KICK"], vu.VERSION, 8) + struct.pack("<Q", 0), [kick])
            assert struct.unpack("<Q", c.request(vu.REQ["GET_FEATURES"]))[0] == features
        finally:
            for fd in fds:
                os.close(fd)
            c.close()
        assert host.alive(), "the host died"


def case_postcopy_refused(args):
    """The driver offers no PAGEFAULT (its DMA cannot fault in pages that
    have not arrived), and a frontend that sends postcopy messages anyway
    has each refused by name before vhost sets up userfaultfd; the
    connection goes on."""
    with guest_session(args) as s:
        host = s.host
        c = vu.Conn(s.sock)
        try:
            features = struct.unpack("<Q", c.request(vu.REQ["GET_FEATURES"]))[0]
            c.request(vu.REQ["SET_FEATURES"], struct.pack("<Q", 1 << vu.VIRTIO_F["VERSION_1"] |
                                                          1 << vu.F_PROTOCOL_FEATURES), reply=False)
            offered = struct.unpack("<Q", c.request(vu.REQ["GET_PROTOCOL_FEATURES"]))[0]
            assert not offered >> vu.PROTO["PAGEFAULT"] & 1, f"PAGEFAULT offered: {offered:#x}"
            c.request(vu.REQ["SET_PROTOCOL_FEATURES"], struct.pack("<Q", 1 << vu.PROTO["REPLY_ACK"]),
                      reply=False)
            c.request(vu.REQ["SET_OWNER"], reply=False)
            for req in ("POSTCOPY_ADVISE", "POSTCOPY_LISTEN", "POSTCOPY_END"):
                ack = c.request(vu.ALL_REQUESTS[req], b"", vu.VERSION | vu.FLAG_NEED_REPLY)
                assert struct.unpack("<Q", ack)[0] == 1, f"{req} not refused"
                assert pmd_said(host, f"{req}: postcopy refused: vdpa_mlx5async0 is a vDPA device") == 1
            assert struct.unpack("<Q", c.request(vu.REQ["GET_FEATURES"]))[0] == features
        finally:
            c.close()
        assert host.alive(), "the host died"


CASES = {"short-memory": case_short_memory, "postcopy-refused": case_postcopy_refused, "log-refused": case_log_refused, "log-truncated": case_log_truncated, "second-frontend": case_second_frontend,
         "bad-guest": case_bad_guest, "bad-rings": case_bad_rings, "reconnect": case_reconnect, "restart": case_restart,
         "hostile-table": case_hostile_table, "pairs": case_pairs, "log": case_log,
         "errors": case_errors}

if __name__ == "__main__":
    run_case(CASES, ("--host", {"required": True}), ("--guest", {"required": True}))
