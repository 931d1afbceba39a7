#!/usr/bin/python3
"""EAL-level tests of the PMD over the emulated device with a real
vhost-user frontend (Debian's dpdk-testpmd over net_virtio_user).

usage: test_pmd.py CASE --host BIN --plugin-dir DIR
"""
import os
import subprocess
import sys

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(TOP, "tools"))
from harness.cases import Skip, run_case  # noqa: E402
from harness.frontend import Frontend  # noqa: E402
from harness.host import EAL_COMMON, HostSession, thread_cpus  # noqa: E402
from harness.proc import unique  # noqa: E402

# Low emulated latencies keep the tests quick; the control path is the same.
FAST = "emu_modify_us=20,emu_query_us=30,emu_create_us=20,emu_destroy_us=20,emu_umem_us=5"


def states(info):
    return [v["state"] for v in info["vqs"]]


def case_plugin(args):
    """-d loads the PMD into an unmodified DPDK app, which probes it."""
    env = dict(os.environ, LD_LIBRARY_PATH=args.plugin_dir)
    argv = ["dpdk-testpmd"] + EAL_COMMON + [
        "--file-prefix", unique("plugin"), "-d", "librte_vdpa_mlx5async.so.0",
        "--vdev", "vdpa_mlx5async0,emu=cx7,queues=2", "--vdev", "net_null0",
        "--", "--total-num-mbufs=2048", "--no-mlockall"]
    p = subprocess.run(argv, input="\n", capture_output=True, text=True, env=env, timeout=120)
    out = p.stdout + p.stderr
    assert "vdpa_mlx5async0: probed emu:cx7" in out, out[-3000:]
    assert p.returncode == 0, out[-3000:]


def case_bad_devargs(args):
    """A bad devarg fails the probe with a message naming the key and range;
    a vhost_socket vhost cannot serve, with the socket and the step."""
    env = dict(os.environ, LD_LIBRARY_PATH=args.plugin_dir)
    for devargs, expect in [("emu=cx9", "devargs emu=cx9: emu: unknown profile 'cx9' (cx6dx, cx7)"),
                            ("emu=cx7,emu_warp=1", "with emu_* keys: emu spec: unknown key 'warp'"),
                            ("emu=cx7,queues=0", "devarg queues=0: expected an integer in [1, 512]"),
                            ("emu=cx7,queue_size=100", "devarg queue_size=100: expected a power of 2"),
                            ("emu=cx7,bogus=1", "unknown devarg 'bogus'"),
                            ("queues=2", "exactly one of emu=<profile> or dev=<PCI address>"),
                            ("emu=cx7,emu=cx6dx", "devarg emu given twice (emu=cx7, then emu=cx6dx)"),
                            ("emu=cx7,vhost_socket=vhost0", "devarg vhost_socket=vhost0: expected an absolute path"),
                            # vhost binds at start: the probe fails naming the socket and the step.
                            ("emu=cx7,vhost_socket=/nonexistent-mlx5a/vhost0",
                             "vhost_socket /nonexistent-mlx5a/vhost0: cannot start it (listen)")]:
        argv = ["dpdk-testpmd"] + EAL_COMMON + [
            "--file-prefix", unique("badarg"), "-d", "librte_vdpa_mlx5async.so.0",
            "--vdev", "vdpa_mlx5async0," + devargs, "--", "--total-num-mbufs=2048"]
        p = subprocess.run(argv, input="\n", capture_output=True, text=True, env=env, timeout=120)
        out = p.stdout + p.stderr
        assert expect in out, f"{devargs}: expected '{expect}' in:\n{out[-2000:]}"


# DPDK 22.11's virtio_user takes at most 8 queue pairs (16 virtqs).
FE_PAIRS = 8


def case_conf_close(args):
    """dev_conf starts the frontend's 16 virtqs in one batch (of 32
    pre-created); the frontend quitting (GET_VRING_BASE) suspends them all;
    reconnecting resumes them (cx6dx: re-created from the saved indexes)."""
    with HostSession(args.host, f"vdpa_mlx5async0,emu=cx6dx,queues=16,queue_size=256,{FAST}") as s:
        host = s.host
        info = host.cmd("info")
        assert info["queues"] == 32 and set(states(info)) == {0}, info  # pre-created, INIT
        for round_ in range(3):
            fe = s.track(Frontend(s.sock, FE_PAIRS, unique("fe")))
            r = host.cmd("wait-ready 16 60", timeout=90)
            assert r["rdy"] == 16, (round_, r)
            fe.quit()
            assert host.cmd("wait-vid 0 60", timeout=90)["ok"]
            info = host.cmd("info")
            used = [v for v in info["vqs"] if v["index"] < 16]
            assert {v["state"] for v in used} == {2}, (round_, info)  # SUSPEND, kept
            assert {v["state"] for v in info["vqs"] if v["index"] >= 16} == {0}, info
            assert all(v["errors"] == 0 for v in info["vqs"]), info
            assert len({v["obj"] for v in info["vqs"]}) == 32, info


def case_app_cycles(args):
    """The public API suspends and resumes every RDY virtq in one batch each,
    never more than max_inflight commands in flight."""
    vdev = f"vdpa_mlx5async0,emu=cx7,queues=16,queue_size=256,max_inflight=8,{FAST}"
    with HostSession(args.host, vdev) as s:
        host = s.host
        s.track(Frontend(s.sock, FE_PAIRS, unique("fe")))
        assert host.cmd("wait-ready 16 60", timeout=90)["rdy"] == 16
        for _ in range(5):
            r = host.cmd("suspend")
            assert r["rc"] == 0 and r["queues"] == 16 and r["commands"] == 32, r
            assert r["failed"] == 0 and 1 <= r["peak_inflight"] <= 8, r
            assert states(host.cmd("info"))[:16] == [2] * 16
            r = host.cmd("resume")
            assert r["rc"] == 0 and r["queues"] == 16 and r["commands"] == 16, r
            assert r["peak_inflight"] <= 8, r
            assert states(host.cmd("info"))[:16] == [1] * 16
        assert host.cmd("resume")["rc"] != 0  # nothing suspended: a clear error, no crash


def case_threads_follow_control(args):
    """With `-l <cpu>` EAL runs the main lcore there and its control threads
    (vhost-events, which calls the vDPA ops) on the other CPUs. The driver's
    threads start on the control CPUs and stay there: every batch runs on
    the device's strand (mlx5a-strand, a control thread), the application's
    own suspend from its main lcore as the frontend's dev_close, so the
    engine's workers never move to the application's lcore."""
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        raise Skip("needs 2 CPUs")
    main_cpu = allowed[0]
    vdev = f"vdpa_mlx5async0,emu=cx7,queues=4,queue_size=256,{FAST}"
    with HostSession(args.host, vdev, extra_eal=["-l", str(main_cpu)]) as s:
        pid = s.host.p.pid

        def driver_threads(cpus):
            names = thread_cpus(pid)
            control = names["vhost-events"]
            assert main_cpu not in control, names  # DPDK: the CPUs no lcore uses
            mine = [n for n in names if n.startswith("mlx5a-")]
            # A worker per command slot: 2 x max_inflight (16).
            assert sum(n.startswith("mlx5a-wk") for n in mine) == 32, names
            want = control if cpus is None else cpus
            wrong = {n: names[n] for n in mine if n.startswith("mlx5a-wk") and names[n] != want}
            assert not wrong, (want, names)
            wrong = {n: names[n] for n in mine if not n.startswith("mlx5a-wk") and names[n] != control}
            assert not wrong, (control, names)

        driver_threads(None)  # probed on the main lcore, placed on the control CPUs
        fe = s.track(Frontend(s.sock, 4, unique("fe")))
        assert s.host.cmd("wait-ready 8 60", timeout=90)["rdy"] == 8
        driver_threads(None)
        r = s.host.cmd("suspend")  # the application's call, from the main lcore
        assert r["rc"] == 0 and r["queues"] == 8, r
        driver_threads(None)
        assert s.host.cmd("resume")["rc"] == 0
        fe.quit()  # GET_VRING_BASE: dev_close's suspend, on vhost-events
        assert s.host.cmd("wait-vid 0 60", timeout=90)["ok"]
        driver_threads(None)


def case_rdma_core_backend(args):
    """The real rdma-core backend (dev=<ibv name>) drives libmlx5emu.so
    preloaded in place of libibverbs/libmlx5: the same code path as on a
    ConnectX, with the emulator underneath."""
    env = dict(os.environ, LD_PRELOAD=args.shim,
               MLX5EMU_PROFILE="cx7,modify_us=20,query_us=30,create_us=20,destroy_us=20,umem_us=5")
    with HostSession(args.host, "vdpa_mlx5async0,dev=mlx5emu0,queues=8,queue_size=256",
                     env=env) as s:
        host = s.host
        assert any("probed rdma-core:mlx5emu0" in l for l in host.output()), host.tail(20)
        fe = s.track(Frontend(s.sock, FE_PAIRS, unique("fe")))
        assert host.cmd("wait-ready 16 60", timeout=90)["rdy"] == 16
        r = host.cmd("suspend")
        assert r["rc"] == 0 and r["queues"] == 16 and r["failed"] == 0, r
        assert states(host.cmd("info")) == [2] * 16
        r = host.cmd("resume")
        assert r["rc"] == 0 and r["queues"] == 16, r
        fe.quit()
        assert host.cmd("wait-vid 0 60", timeout=90)["ok"]
        assert states(host.cmd("info")) == [2] * 16
    # Without the emulator preloaded this machine has no RDMA device: the
    # probe says so, naming the address it looked for.
    argv = ["dpdk-testpmd"] + EAL_COMMON + [
        "--file-prefix", unique("nodev"), "-d", "librte_vdpa_mlx5async.so.0",
        "--vdev", "vdpa_mlx5async0,dev=00:00.0", "--", "--total-num-mbufs=2048"]
    p = subprocess.run(argv, input="\n", capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, LD_LIBRARY_PATH=args.plugin_dir))
    out = p.stdout + p.stderr
    assert "no RDMA device on this machine to find 00:00.0" in out, out[-2000:]


def case_telemetry(args):
    """/vdpa_mlx5async/{list,info,vqs,latency,fw_errors}: devices, backend
    and last timings, per-virtq state and indexes, command latencies and
    refusals, as the PMD sees them."""
    with HostSession(args.host, f"vdpa_mlx5async0,emu=cx7,queues=4,queue_size=256,{FAST}",
                     prefix=unique("tele")) as s:
        host, telemetry = s.host, s.host.telemetry
        s.track(Frontend(s.sock, 4, unique("fe")))
        assert host.cmd("wait-ready 8 60", timeout=90)["rdy"] == 8
        assert host.cmd("suspend")["rc"] == 0
        devices = telemetry.query("/vdpa_mlx5async/list")
        assert devices == ["vdpa_mlx5async0"], devices
        info = telemetry.query("/vdpa_mlx5async/info,vdpa_mlx5async0")
        assert info["backend"].startswith("emu:cx7") and info["strategy"] == "async", info
        assert info["suspend_queues"] == 8 and info["suspend_commands"] == 16, info
        assert info["vid"] >= 0 and info["max_virtqs"] == 512, info
        vqs = telemetry.query("/vdpa_mlx5async/vqs,vdpa_mlx5async0")
        assert vqs["index"] == list(range(8)) and vqs["state"] == [2] * 8, vqs
        bad = telemetry.query("/vdpa_mlx5async/info,nosuch")
        assert bad is None, bad  # -EINVAL: null payload
        # Latency histograms: the start created and readied 8 virtqs, the
        # suspend modified and queried each; every count is in its buckets.
        lat = telemetry.query("/vdpa_mlx5async/latency,vdpa_mlx5async0")
        types = dict(zip(lat["type"], range(len(lat["type"]))))
        for t, at_least in [("create_virtq", 8), ("modify_virtq", 16), ("query_virtq", 8)]:
            assert t in types, lat["type"]
            i = types[t]
            count = lat["count"][i]
            assert count >= at_least and sum(lat["buckets_" + t]) == count, (t, lat)
            assert 0 < lat["p50_ns"][i] <= lat["p99_ns"][i] <= lat["max_ns"][i], (t, lat)
            assert lat["sum_ns"][i] <= count * lat["max_ns"][i] and lat["timed_out"][i] == 0, (t, lat)
        errs = telemetry.query("/vdpa_mlx5async/fw_errors,vdpa_mlx5async0")
        assert errs["type"] == [] and errs["count"] == [] and errs["unkeyed"] == 0, errs
        assert telemetry.query("/vdpa_mlx5async/latency,nosuch") is None


CASES = {"telemetry": case_telemetry, "rdma-core": case_rdma_core_backend,
         "plugin": case_plugin, "bad-devargs": case_bad_devargs, "conf-close": case_conf_close,
         "app-cycles": case_app_cycles, "threads-follow-control": case_threads_follow_control}

if __name__ == "__main__":
    run_case(CASES, ("--host", {"required": True}), ("--plugin-dir", {"required": True}),
             ("--shim", {"default": ""}))
