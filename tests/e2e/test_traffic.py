#!/usr/bin/python3
"""Traffic through the emulated datapath with a real vhost-user frontend:
Debian's dpdk-testpmd over net_virtio_user in io forwarding (`start
tx_first`) against tests/e2e/vdpa_host with the PMD on the emulator. The
device loops TX queue 2k+1 back into RX queue 2k, so the first bursts
circulate on every queue pair until testpmd stops.

Lossless check: after stopping, testpmd drains its receive queues (rxonly
forwarding); then every packet the port transmitted was received (port
RX-packets == TX-packets), the device's indexes equal the rings' in guest
memory, and no virtq is in ERR.

usage: test_traffic.py CASE --host BIN [--cycles K] [--guest BIN]
"""
import os
import socket
import sys

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(TOP, "tools"))
from harness.cases import run_case  # noqa: E402
from harness.frontend import Frontend, VhostUserGuest  # noqa: E402
from harness.host import HostSession  # noqa: E402
from harness.proc import unique  # noqa: E402
from harness.wait import until  # noqa: E402

FAST = "emu_modify_us=20,emu_query_us=30,emu_create_us=20,emu_destroy_us=20,emu_umem_us=5"
RDY, SUSPEND, ERR = 1, 2, 3


def circulating(fe, above):
    """Port 0's (RX, TX) once it transmitted more than `above` packets."""
    return until(fe.port_stats, lambda st: st[1] > above, 60, f"more than {above} packets transmitted")


def drain(fe):
    """Stops io forwarding, then receives (rxonly) until every packet the
    port transmitted came back (TX no longer moves: nothing forwards);
    returns (RX, TX). A lost packet fails the wait, naming both counts."""
    fe.send("stop")
    fe.read_until(lambda l: "Done." in l, 60)
    fe.send("set fwd rxonly")
    fe.send("start")
    stats = until(fe.port_stats, lambda st: st[0] == st[1], 30, "RX == TX: every packet sent came back")
    fe.send("stop")
    fe.read_until(lambda l: "Done." in l, 60)
    return stats


def check_indexes(host, nrings):
    """Suspended (so the driver has queried them), the device's indexes
    equal the rings in guest memory; every TX chain posted was consumed."""
    s = host.cmd("suspend")
    assert s["rc"] == 0 and s["queues"] == nrings, s
    info = {v["index"]: v for v in host.cmd("info")["vqs"]}
    rings = host.cmd("rings")["rings"]
    assert len(rings) >= nrings, rings
    for r in rings[:nrings]:
        v = info[r["index"]]
        assert v["state"] == SUSPEND, v
        assert v["used"] == r["used"], (v, r)
        assert v["avail"] == v["used"], v  # whole chains: every fetched chain completed
        if r["index"] % 2:  # TX: all the frontend posted was consumed
            assert v["avail"] == r["avail"], (v, r)
        else:  # RX: never past what the frontend posted
            assert (r["avail"] - v["avail"]) % 65536 <= 256, (v, r)
    assert host.cmd("resume")["rc"] == 0


def run(args, pairs, cycles):
    with HostSession(args.host, f"vdpa_mlx5async0,emu=cx7,queues={pairs},queue_size=256,{FAST}") as s:
        host = s.host
        fe = s.track(Frontend(s.sock, pairs, unique("fe"), extra=["--port-topology=loop"]))
        nrings = 2 * pairs
        assert host.cmd(f"wait-ready {nrings} 60", timeout=90)["rdy"] == nrings
        fe.send("set fwd io")
        fe.send("start tx_first")
        fe.read_until(lambda l: "io packet forwarding" in l, 30)
        before = fe.port_stats()
        done = 0
        while done < cycles:
            k = min(100, cycles - done)
            r = host.cmd(f"cycles {k}", timeout=120)
            assert r["failed"] == 0, r
            done += k
        after = circulating(fe, before[1])  # traffic runs on through the cycles
        print(f"packets moved during {cycles} cycles, until the count moved: {after[1] - before[1]}")
        stats = [host.cmd(f"stats {q}") for q in range(nrings)]
        for q, st in enumerate(stats):
            assert st["rc"] == 6 and st["completed_descriptors"] > 0, (q, st)  # every queue moved packets
            assert st["completion errors"] == 0 and st["bad descriptor errors"] == 0, (q, st)
        rx, tx = drain(fe)
        print(f"pairs={pairs} cycles={cycles} port RX={rx} TX={tx}")
        assert tx > 32 * pairs, (rx, tx)  # more than the first bursts: they circulated
        assert rx == tx, f"lost {tx - rx} packets (RX {rx}, TX {tx})"
        check_indexes(host, nrings)
        info = host.cmd("info")
        assert all(v["state"] != ERR and v["errors"] == 0 for v in info["vqs"]), info
        fe.quit()
        assert host.cmd("wait-vid 0 60", timeout=90)["ok"]


def case_reconnect(args):
    """The frontend quits while packets circulate (virtio_user: ring
    disables, then GET_VRING_BASE: dev_close suspends every queue in one
    batch) and comes back, three times: every round circulates and drains
    losslessly, and each dev_close leaves whole chains (avail == used)."""
    pairs = 2
    with HostSession(args.host, f"vdpa_mlx5async0,emu=cx7,queues={pairs},queue_size=256,{FAST}") as s:
        host = s.host
        for rnd in range(3):
            fe = s.track(Frontend(s.sock, pairs, unique("fe"), extra=["--port-topology=loop"]))
            assert host.cmd(f"wait-ready {2 * pairs} 60", timeout=90)["rdy"] == 2 * pairs
            fe.send("set fwd io")
            fe.send("start tx_first")
            fe.read_until(lambda l: "io packet forwarding" in l, 30)
            circulating(fe, 32 * pairs)  # beyond the first bursts
            rx, tx = drain(fe)
            print(f"round {rnd}: port RX={rx} TX={tx}")
            assert tx > 32 * pairs and rx == tx, (rnd, rx, tx)
            fe.quit()
            assert host.cmd("wait-vid 0 60", timeout=90)["ok"]
            info = host.cmd("info")
            for v in info["vqs"][:2 * pairs]:
                assert v["state"] == SUSPEND and v["avail"] == v["used"], (rnd, v)
                assert v["errors"] == 0, (rnd, v)


def case_second_connection(args):
    """vhost attaches every connection of the socket to the device: a second
    one (here a bare connect and close, as a probe of the socket would do)
    must leave the frontend the device serves untouched: its virtqs stay
    RDY and its packets keep circulating, losslessly."""
    pairs = 2
    with HostSession(args.host, f"vdpa_mlx5async0,emu=cx7,queues={pairs},queue_size=256,{FAST}") as s:
        host = s.host
        fe = s.track(Frontend(s.sock, pairs, unique("fe"), extra=["--port-topology=loop"]))
        assert host.cmd(f"wait-ready {2 * pairs} 60", timeout=90)["rdy"] == 2 * pairs
        fe.send("set fwd io")
        fe.send("start tx_first")
        fe.read_until(lambda l: "io packet forwarding" in l, 30)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as c:
            c.connect(s.sock)
        host.read_until(lambda l: "connection closed;" in l and "nothing to clean up" in l, 60)
        info = host.cmd("info")
        assert [v["state"] for v in info["vqs"][:2 * pairs]] == [RDY] * (2 * pairs), info
        # The first bursts go on circulating after the other connection.
        start = fe.port_stats()[1]
        circulating(fe, start + 32 * pairs)
        rx, tx = drain(fe)
        assert tx > start + 32 * pairs and rx == tx, (start, rx, tx)
        fe.quit()
        assert host.cmd("wait-vid 0 60", timeout=90)["ok"]


def case_log(args):
    """Dirty logging with traffic (tools/vhost-user-guest as the frontend:
    LOG_ALL through SET_LOG_BASE + SET_FEATURES): packets the device loops
    back mark its writes in the vhost log (the used rings of both queues
    and the RX buffers, through the log's mkey); with LOG_ALL off nothing
    more is marked."""
    with HostSession(args.host, f"vdpa_mlx5async0,emu=cx7,queues=1,queue_size=256,{FAST}") as s:
        g = s.track(VhostUserGuest(args.guest, s.sock, 1))
        run_log(s.host, g)


def run_log(host, g):
    """case_log's steps, the guest `g` on the host's socket."""

    cmd = g.cmd

    def loop_back(n, total):
        cmd(f"post-rx 0 {n}")
        cmd(f"post-tx 1 {n} 200")
        cmd("kick 1")
        until(lambda: (cmd("used 0")["used_idx"], cmd("used 1")["used_idx"]), lambda u: u == (total, total),
              30, f"{total} packets looped back", describe=lambda u: f"used {u}; {host.cmd('info')}")

    cmd("start")
    assert host.cmd("wait-ready 2 60", timeout=90)["rdy"] == 2
    cmd("log-on")
    assert cmd("log-dirty")["count"] == 0
    loop_back(8, 8)
    d = cmd("log-dirty")
    print(f"log on: {d['count']} pages dirty, used rings {d['used_rings_dirty']}")
    assert d["used_rings_dirty"] == [0, 1], d
    assert d["count"] >= 3, d  # both used rings and at least one RX buffer page
    cmd("log-off")
    cmd("log-clear")
    loop_back(8, 16)
    assert cmd("log-dirty")["count"] == 0
    info = host.cmd("info")
    assert all(v["errors"] == 0 for v in info["vqs"][:2]), info
    cmd("stop")
    cmd("quit")
    assert g.wait(30) == 0


def case_traffic(args):
    run(args, 4, 0)


def case_cycles(args):
    run(args, 4, args.cycles)


CASES = {"traffic": case_traffic, "cycles": case_cycles, "reconnect": case_reconnect,
         "log": case_log, "second-connection": case_second_connection}

if __name__ == "__main__":
    run_case(CASES, ("--host", {"required": True}), ("--cycles", {"type": int, "default": 1000}),
             ("--guest", {"default": ""}))
