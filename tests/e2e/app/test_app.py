#!/usr/bin/python3
"""vdpa-testpmd end to end: scripted sessions (--cmdline-file), the prompt,
exit status, --json against the schema, --trace against the command count.

Each case starts the app (and Debian's dpdk-testpmd over net_virtio_user as
the vhost-user frontend when virtqs must be RDY) with its own EAL file
prefix and private socket folder, waits with deadlines only, asserts
properties (never times) and kills every process it started.

  test_app.py CASE --app build/app/vdpa-testpmd/vdpa-testpmd --schema FILE
"""
import json
import os
import pty
import re
import select
import signal
import socket
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from app_lib import (DEADLINE, VDEV, VQS, app_argv, expect, run_app, script,  # noqa: E402
                     start_app, start_frontend, with_frontend)
from check_json import check_trace, validate  # noqa: E402
from harness import TOP  # noqa: E402  (app_lib put tools/ on the path)
from harness.cases import run_case  # noqa: E402
from harness.proc import Workdir, unique  # noqa: E402
from harness.wait import until  # noqa: E402

PLOT = os.path.join(TOP, "tools", "plot.py")


def load_schema(args):
    with open(args.schema) as f:
        return json.load(f)


def case_script(args):
    """Every command, good and bad; errors print a message and the session
    goes on; nothing runs after quit."""
    wd = Workdir("mlx5a-e2e-")
    try:
        res = os.path.join(wd.path, "r.json")
        trace = os.path.join(wd.path, "t.json")
        custom = os.path.join(wd.path, "custom.sock")
        s = script(wd, f"""# a comment, then every command
help
list
show device all
show device 0
show device nosuch
suspend nosuch
resume 42
cycle all abc
cycle all 0
cycle 0 2 xyz
cycle nosuch 1
stats 0 all
stats 0 1
stats 0 999
stats 0 -1
stats nosuch all
clear stats
set strategy all bogus
set strategy 0 sequential
set strategy all async
set max_inflight 0 abc
set max_inflight 0 0
set max_inflight all 4
set per_cycle maybe
set per_cycle on
trace stop
trace save {trace}
trace start
trace stop
trace save {trace}
fault 0
fault nosuch clear
fault 0 clear
detach 0
detach 0
attach 0
create {custom} 0
detach all
attach all
detach all
create {custom} 0
show device 0
set strategy
bogus command
list
quit
list
""")
        rc, lines = run_app(args, wd, ["--auto-start", "--cmdline-file", s, "--json", res])
        assert rc == 0, f"exit status {rc}:\n" + "\n".join(lines)
        expect(lines,
               r"^vdpa> help$", r"set strategy <dev\|all> async\|sequential\|threads",
               r"^vdpa> list$", r"vdpa_mlx5async0 .* emu:cx7", r"1 device\(s\)",
               r"^vdpa> show device all$", r"device vdpa_mlx5async0", rf"{VQS} virtq\(s\)",
               r"^vdpa> show device 0$", r"device vdpa_mlx5async0",
               r"^vdpa> show device nosuch$", r"error: unknown device 'nosuch'",
               r"^vdpa> suspend nosuch$", r"error: unknown device 'nosuch'",
               r"^vdpa> resume 42$", r"error: unknown device '42'",
               r"^vdpa> cycle all abc$", r"error: invalid cycle count 'abc'",
               r"^vdpa> cycle all 0$", r"error: invalid cycle count '0'",
               r"^vdpa> cycle 0 2 xyz$", r"error: invalid interval 'xyz'",
               r"^vdpa> cycle nosuch 1$", r"error: unknown device 'nosuch'",
               r"^vdpa> stats 0 all$", r"stats for vdpa_mlx5async0", r"suspend: 0 ok",
               r"^vdpa> stats 0 1$", r"stats for vdpa_mlx5async0",
               r"^vdpa> stats 0 999$", r"error: invalid queue '999'",
               r"^vdpa> stats 0 -1$", r"error: invalid queue '-1'",
               r"^vdpa> stats nosuch all$", r"error: unknown device 'nosuch'",
               r"^vdpa> clear stats$", r"vdpa_mlx5async0: stats cleared",
               r"^vdpa> set strategy all bogus$", r"error: unknown strategy 'bogus'",
               r"^vdpa> set strategy 0 sequential$", r"vdpa_mlx5async0: strategy sequential",
               r"^vdpa> set strategy all async$", r"vdpa_mlx5async0: strategy async",
               r"^vdpa> set max_inflight 0 abc$", r"error: invalid max_inflight 'abc'",
               r"^vdpa> set max_inflight 0 0$", r"error: invalid max_inflight '0'",
               r"^vdpa> set max_inflight all 4$", r"vdpa_mlx5async0: max_inflight 4",
               r"^vdpa> set per_cycle maybe$", r"error: invalid value 'maybe' for per_cycle",
               r"^vdpa> set per_cycle on$", r"^per-cycle lines on$",
               r"^vdpa> trace stop$", r"error: .*trace",
               r"^vdpa> trace save ", r"error: nothing traced yet",
               r"^vdpa> trace start$", r"trace: started on 1 device",
               r"^vdpa> trace stop$", r"trace: stopped",
               r"^vdpa> trace save ", r"trace: 0 command spans",
               r"^vdpa> fault 0$", r"error: .*bad arguments", r"fault <dev> <rule",
               r"^vdpa> fault nosuch clear$", r"error: unknown device 'nosuch'",
               r"^vdpa> fault 0 clear$", r"vdpa_mlx5async0: fault rule 'clear' set",
               r"^vdpa> detach 0$", r"vdpa_mlx5async0: detached from .*vhost0",
               r"^vdpa> detach 0$", r"error: vdpa_mlx5async0 is not attached",
               r"^vdpa> attach 0$", r"vdpa_mlx5async0: attached to .*vhost0",
               r"^vdpa> create ", r"error: vdpa_mlx5async0 is already attached",
               r"^vdpa> detach all$", r"detached from .*vhost0",
               r"^vdpa> attach all$", r"vdpa_mlx5async0: attached to .*vhost0",
               r"^vdpa> detach all$", r"detached from .*vhost0",
               r"^vdpa> create ", r"vdpa_mlx5async0: attached to .*custom.sock",
               r"^vdpa> show device 0$", r"socket: .*custom.sock",
               r"^vdpa> set strategy$", r"error: .*bad arguments", r"usage:",
               r"^vdpa> bogus command$", r"error: .*unknown command",
               r"^vdpa> list$", r"1 device\(s\)",
               r"^vdpa> quit$", r"^cycles: 0 ok, 0 failed$")
        assert lines.count("vdpa> list") == 2, "a command ran after quit"
        # --json without cycles: valid, no results.
        with open(res) as f:
            doc = json.load(f)
        schema = load_schema(args)
        errs = validate(doc, schema)
        assert not errs, errs
        assert doc["results"] == [] and doc["cycles_ok"] == 0, doc
        check_schema_rejects(schema, doc)
        t = check_trace(trace)
        assert t["fw"] == [] and t["ops"] == [], t
        check_trace_rejects(wd)
    finally:
        wd.close()


def check_trace_rejects(wd):
    """The trace checker refuses partial overlaps and commands without status."""
    def span(name, ts, dur, args):
        return {"ph": "X", "name": name, "cat": "fw", "pid": 1, "tid": 1, "ts": ts,
                "dur": dur, "args": args}
    ok = {"status": "OK"}
    for events in ([span("a", 0.0, 5.0, ok), span("b", 4.0, 5.0, ok)],
                   [span("a", 0.0, 5.0, {})]):
        path = os.path.join(wd.path, "bad-trace.json")
        with open(path, "w") as f:
            json.dump({"traceEvents": events}, f)
        try:
            check_trace(path)
        except AssertionError:
            continue
        raise AssertionError(f"trace checker accepted {events}")


def check_schema_rejects(schema, good):
    """The checker and the schema reject what the app must never write."""
    entry = {"strategy": "async", "op": "suspend", "devices": 1, "queues": 8,
             "max_inflight": 16, "samples": 3, "min_ms": 1.0, "median_ms": 1.5, "p99_ms": 2.0,
             "max_ms": 2.0, "ideal_ms": 1.0, "measured_over_ideal": 1.5, "failures": 0}
    assert not validate(dict(good, results=[entry]), schema)
    bad = [
        {k: v for k, v in good.items() if k != "queues"},
        dict(good, extra=1),
        dict(good, tool="other"),
        dict(good, queues=-1),
        dict(good, results=[dict(entry, op="migrate")]),
        dict(good, results=[dict(entry, samples=1.5)]),
        dict(good, results=[dict(entry, median_ms="1.5")]),
        dict(good, results=[{k: v for k, v in entry.items() if k != "failures"}]),
    ]
    for b in bad:
        assert validate(b, schema), f"schema accepted {b}"


def case_cycles(args):
    """--strategies: cycles per strategy with a real frontend, the table,
    exit status 0, JSON valid with every sample accounted for."""
    wd = Workdir("mlx5a-e2e-")
    try:
        res = os.path.join(wd.path, "r.json")
        n = 3
        rc, lines = with_frontend(args, wd, [
            "--auto-start", "--wait-ready", str(DEADLINE), "--cycles", str(n), "--per-cycle",
            "--strategies", "sequential,threads,async", "--json", res])
        assert rc == 0, f"exit status {rc}:\n" + "\n".join(lines)
        expect(lines, r"frontend ready on 1 device", r"strategy sequential: 3 cycles",
               r"cycle 3/3: .* ok$", r"strategy threads", r"strategy async",
               r"^\| operation \| sequential \| threads \| async \| reduction \|$",
               r"^\| suspend +\| [0-9.]+ ms \| [0-9.]+ ms \| [0-9.]+ ms \| [0-9.]+x \|$",
               r"^\| resume +\| [0-9.]+ ms \| [0-9.]+ ms \| [0-9.]+ ms \| [0-9.]+x \|$",
               r"^cycles: 9 ok, 0 failed$")
        with open(res) as f:
            doc = json.load(f)
        errs = validate(doc, load_schema(args))
        assert not errs, errs
        assert doc["queues"] == VQS and doc["cycles_ok"] == 3 * n, doc
        got = {(r["strategy"], r["op"]): r for r in doc["results"]}
        assert set(got) == {(s, o) for s in ("sequential", "threads", "async")
                            for o in ("suspend", "resume")}, got.keys()
        for r in got.values():
            assert r["samples"] == n and r["failures"] == 0 and r["queues"] == VQS, r
            assert r["min_ms"] <= r["median_ms"] <= r["p99_ms"] <= r["max_ms"], r
        # Command latencies: 9 cycles, each a MODIFY and a QUERY per virtq to
        # suspend and a MODIFY to resume, besides the start's; nothing refused.
        [lat] = doc["latency"]
        cmds = {c["type"]: c for c in lat["commands"]}
        assert cmds["query_virtq"]["count"] >= 3 * n * VQS, cmds.keys()
        assert cmds["modify_virtq"]["count"] >= 2 * 3 * n * VQS, cmds["modify_virtq"]
        for c in cmds.values():
            assert sum(c["buckets"]) == c["count"], c
            assert c["p50_ns"] <= c["p99_ns"] <= c["max_ns"] and c["timed_out"] == 0, c
        assert lat["fw_errors"] == [] and lat["fw_errors_unkeyed"] == 0, lat
        expect(lines, r"command latency of vdpa_mlx5async0", r"^  query_virtq +\d+ +[0-9.]+ ")
        # The demo's plot helper reads these files: one line per strategy.
        svg = os.path.join(wd.path, "plot.svg")
        subprocess.run([sys.executable, PLOT, "-o", svg, "--op", "both", res], check=True,
                       timeout=DEADLINE)
        root = ET.parse(svg).getroot()
        series = [g.get("id") for g in root.iter("{http://www.w3.org/2000/svg}g")
                  if g.get("id", "").startswith("series-")]
        assert len(series) == 2 * 4, series  # 3 strategies + ideal, 2 panels
    finally:
        wd.close()


def case_trace(args):
    """A scripted session with a frontend: one "X" span per firmware command
    the app reports issuing, one track per virtq, phases per operation."""
    wd = Workdir("mlx5a-e2e-")
    try:
        trace = os.path.join(wd.path, "t.json")
        s = script(wd, f"""trace start
show device all
suspend all
show device 0
resume all
cycle all 2 1
resume all
trace save {trace}
quit
""")
        rc, lines = with_frontend(args, wd, ["--auto-start", "--wait-ready", str(DEADLINE),
                                             "--cmdline-file", s])
        assert rc == 0, f"exit status {rc}:\n" + "\n".join(lines)
        expect(lines, r"^vdpa> suspend all$", rf"suspend of 1 device\(s\): ok",
               rf"^  vdpa_mlx5async0 +{VQS} ", r"^vdpa> show device 0$",
               *[rf"^  {q} +SUSPEND " for q in range(VQS)],
               r"^vdpa> resume all$", r"resume of 1 device\(s\): ok",
               r"^vdpa> cycle all 2 1$", r"cycles on vdpa_mlx5async0",
               r"^  suspend +2 +0 ", r"^  resume +2 +0 ",
               # nothing suspended: fails, and adds no command to the count
               r"^vdpa> resume all$", r"resume of 1 device\(s\): FAILED")
        line = next(l for l in lines if l.startswith("trace: ") and "written to" in l)
        m = re.match(r"trace: (\d+) command spans \((\d+) in suspend/resume batches, "
                     r"(\d+) in the app's calls, which issued (\d+) commands\)", line)
        assert m, line
        spans, op_spans, app_spans, issued = map(int, m.groups())
        t = check_trace(trace)
        fw_ops = [e for e in t["fw"] if e["args"]["batch"] in ("suspend", "resume")]
        # Traced after the frontend was ready: every batch is one of the app's.
        assert issued > 0 and len(fw_ops) == op_spans == app_spans == issued, (len(fw_ops), line)
        assert t["other"]["commands_issued"] == issued, t["other"]
        assert len(t["fw"]) == spans, (len(t["fw"]), line)
        # 3 suspends and 3 resumes over every virtq: each virtq has a track.
        assert {e["tid"] for e in fw_ops} == set(range(1, VQS + 1)), {e["tid"] for e in fw_ops}
        # 3 suspends and 4 resumes (the last one refused), each with 3 phases.
        assert len(t["ops"]) == 7 and len(t["phases"]) == 21, (len(t["ops"]), len(t["phases"]))
        for o in t["ops"]:  # the phases of each operation nest inside it
            inside = [p for p in t["phases"] if p["pid"] == o["pid"] and
                      o["ts"] <= p["ts"] and p["ts"] + p["dur"] <= o["ts"] + o["dur"] + 0.002]
            assert sorted(p["name"] for p in inside) == ["firmware", "prepare", "vhost"], o
        assert all(e["args"]["status"] == "OK" for e in fw_ops)
        names = {e["args"]["name"] for e in t["meta"] if e["name"] == "thread_name"}
        assert {f"vq {q}" for q in range(VQS)} <= names, names
    finally:
        wd.close()


def case_fault(args):
    """An injected firmware error fails that cycle (message, FAILED line),
    later cycles run, and the exit status says a cycle failed."""
    wd = Workdir("mlx5a-e2e-")
    try:
        s = script(wd, """fault 0 op=modify nth=3 status=0x9 syndrome=0x1
cycle 0 1
show device 0
show latency 0
fault 0 clear
set per_cycle on
cycle 0 2
stats 0 all
""")
        rc, lines = with_frontend(args, wd, ["--auto-start", "--wait-ready", str(DEADLINE),
                                             "--cmdline-file", s])
        assert rc == 1, f"exit status {rc} after a failed cycle:\n" + "\n".join(lines)
        expect(lines, r"fault rule 'op=modify nth=3 status=0x9 syndrome=0x1' set",
               r"^vdpa> cycle 0 1$", r"cycle 1/1: .*FAILED$", r"cycles on vdpa_mlx5async0",
               r"failed cycles: 1",
               # the refusal counted by command type, status and syndrome
               r"^vdpa> show latency 0$", r"^  modify_virtq +\d+ ", r"^  query_virtq +\d+ ",
               r"^  modify_virtq +0x09 0x00000001 +1$", r"^vdpa> fault 0 clear$", r"^vdpa> cycle 0 2$",
               r"cycle 1/2: .* ok$", r"cycle 2/2: .* ok$", r"failed cycles: 0",
               r"^vdpa> stats 0 all$", r"suspend: 2 ok, 1 failed", r"^cycles: 2 ok, 1 failed$")
    finally:
        wd.close()


def case_hung(args):
    """A firmware command that never answers: the suspend fails naming its
    queue, the device says how many commands are unanswered and which
    virtqs are unsure, a later suspend refuses to call that virtq stopped;
    once the kernel's command timeout failed the command (emulated: 3 s)
    suspend and resume cover every virtq again; quit with a hung command
    ends when the kernel fails it."""
    wd = Workdir("mlx5a-e2e-")
    vdev = VDEV + ",timeout_ms=300,emu_cmd_timeout_ms=3000"
    app = start_app(args, wd, ["-i", "--auto-start", "--wait-ready", str(DEADLINE)],
                    stdin=True, vdevs=[vdev])
    fe = None
    try:
        app.wait_for(r"attached to .*vhost0")
        fe = start_frontend(wd)
        app.wait_for(r"^frontend ready")
        app.send("fault 0 op=modify vq=3 hang")
        app.send("suspend 0")
        app.wait_for(r"MODIFY_GENERAL_OBJECT .*queue 3: no answer before the deadline")
        app.send("show device 0")
        app.wait_for(r"commands unanswered: 1 \(of 16 slots\)  unsure virtqs: 1")
        app.send("suspend 0")
        app.wait_for(r"virtq 3: state unknown, the last command is still unanswered; "
                     r"it may still run")
        app.send("fault 0 clear")
        # The emulated kernel fails the hung command after its timeout: the
        # device then has no command unanswered, and a suspend covers virtq 3.
        until(lambda: unanswered_commands(app), lambda n: n == 0, DEADLINE,
              "the hung command failed by the kernel's timeout")
        answers = sum(1 for l in app.output() if "suspend of 1 device(s):" in l)
        app.send("suspend 0")
        app.wait_for(r"suspend of 1 device\(s\): ", count=answers + 1)
        last = [l for l in app.output() if "suspend of 1 device(s):" in l][-1]
        assert "suspend of 1 device(s): ok" in last, app.tail(40)
        app.send("show device 0")
        app.wait_for(r"commands unanswered: 0 \(of 16 slots\)  unsure virtqs: 0")
        app.send("resume 0")
        app.send("fault 0 op=modify vq=5 hang")
        app.send("suspend 0")
        app.wait_for(r"queue 5: no answer before the deadline")
        app.send("quit")
        rc = app.wait()
        lines = app.output()
        assert rc == 0, f"exit status {rc}:\n" + "\n".join(lines)
        expect(lines, r"closing with 1 firmware commands unanswered")
    finally:
        app.kill()
        if fe:
            fe.stop()
        wd.close()


def unanswered_commands(app):
    """`show device 0`'s count of firmware commands still unanswered."""
    rx = re.compile(r"commands unanswered: (\d+)")
    seen = sum(1 for l in app.output() if rx.search(l))
    app.send("show device 0")
    app.wait_for(rx.pattern, count=seen + 1)
    return int(rx.search([l for l in app.output() if rx.search(l)][-1]).group(1))


def case_exit_status(args):
    """Without a frontend: --wait-ready times out with a message and --cycles
    fails (nothing RDY): both exit 1; so does a run whose device's probe
    failed."""
    wd = Workdir("mlx5a-e2e-")
    try:
        rc, lines = run_app(args, wd, ["--auto-start", "--wait-ready", "1", "--cycles", "1"])
        assert rc == 1, f"exit status {rc}:\n" + "\n".join(lines)
        expect(lines, r"error: vdpa_mlx5async0: frontend not ready after 1 s", r"^cycles: 0 ok")
        res = os.path.join(wd.path, "r.json")
        rc, lines = run_app(args, wd, ["--auto-start", "--cycles", "2", "--json", res])
        assert rc == 1, f"exit status {rc}:\n" + "\n".join(lines)
        expect(lines, r"cycle 1/2: .*FAILED$", r"^cycles: 0 ok, 2 failed$")
        with open(res) as f:
            doc = json.load(f)
        assert not validate(doc, load_schema(args)), validate(doc, load_schema(args))
        assert doc["cycles_failed"] == 2 and len(doc["results"]) == 2, doc
        for r in doc["results"]:  # no sample: times are null, failures counted
            assert r["samples"] == 0 and r["failures"] == 2 and r["median_ms"] is None, r
        rc, lines = run_app(args, wd, ["--cycles", "x"])
        assert rc == 2 and any("invalid value 'x' for --cycles" in l for l in lines), lines
        # A probe that failed: EAL goes on without the device, the app does not.
        rc, lines = run_app(args, wd, ["--auto-start", "--cycles", "1"],
                            vdevs=["vdpa_mlx5async0,emu=cx7,emu=cx6dx"])
        assert rc == 1, f"exit status {rc}:\n" + "\n".join(lines)
        expect(lines, r"devarg emu given twice", r"^error: no mlx5async device was probed")
    finally:
        wd.close()


def case_interactive(args):
    """-i: the prompt reads commands from stdin, errors keep it running;
    SIGTERM ends it cleanly whichever thread the signal lands on."""
    wd = Workdir("mlx5a-e2e-")
    app = start_app(args, wd, ["-i"], stdin=True)
    app2 = None
    try:
        app.wait_for(r"mlx5async device\(s\)")
        app.send("show device nosuch")
        app.wait_for(r"error: unknown device 'nosuch'")
        app.send("list")
        app.wait_for(r"1 device\(s\)")
        app.send("quit")
        assert app.wait() == 0, "\n".join(app.output())
        expect(app.output(), r"unknown device 'nosuch'", r"1 device\(s\)",
               r"^cycles: 0 ok, 0 failed$")
        app2 = start_app(args, wd, ["-i", "--auto-start"], stdin=True)
        app2.wait_for(r"attached to .*vhost0")
        app2.p.send_signal(signal.SIGTERM)
        assert app2.wait() == 0, "\n".join(app2.output())
        expect(app2.output(), r"^cycles: 0 ok, 0 failed$", r"detached from .*vhost0")
    finally:
        app.kill()
        if app2:
            app2.kill()
        wd.close()


def case_multi(args):
    """Two devices, two frontends: `all` is one batch over both devices,
    --json describes two-device batches."""
    wd = Workdir("mlx5a-e2e-")
    try:
        res = os.path.join(wd.path, "r.json")
        s = script(wd, """list
cycle all 2
suspend all
show device 1
resume all
stats 1 all
""")
        vdevs = [VDEV, VDEV.replace("vdpa_mlx5async0", "vdpa_mlx5async1")]
        rc, lines = with_frontend(args, wd, ["--auto-start", "--wait-ready", str(DEADLINE),
                                             "--cmdline-file", s, "--json", res],
                                  devices=2, vdevs=vdevs)
        assert rc == 0, f"exit status {rc}:\n" + "\n".join(lines)
        expect(lines, r"frontend ready on 2 device", r"2 device\(s\)",
               r"cycles on 2 devices", rf"virtqs: {2 * VQS} .*failed cycles: 0",
               r"suspend of 2 device\(s\): ok", rf"^  vdpa_mlx5async0 +{VQS} ",
               rf"^  vdpa_mlx5async1 +{VQS} ", r"device vdpa_mlx5async1",
               *[rf"^  {q} +SUSPEND " for q in range(VQS)],
               r"resume of 2 device\(s\): ok", r"stats for vdpa_mlx5async1",
               r"suspend: 3 ok, 0 failed   resume: 3 ok, 0 failed",
               r"^cycles: 2 ok, 0 failed$")
        with open(res) as f:
            doc = json.load(f)
        assert not validate(doc, load_schema(args)), validate(doc, load_schema(args))
        assert doc["devices"] == 2 and doc["queues"] == 2 * VQS, doc
        assert all(r["devices"] == 2 and r["samples"] == 2 for r in doc["results"]), doc
    finally:
        wd.close()


def case_client(args):
    """--client: the frontend owns the socket, the app connects to it."""
    wd = Workdir("mlx5a-e2e-")
    fe = start_frontend(wd, "vhost0", server=True)
    try:
        sock = os.path.join(wd.path, "vhost0")
        until(lambda: os.path.exists(sock), bool, DEADLINE, f"socket {sock} from the frontend",
              alive=fe.alive)
        rc, lines = run_app(args, wd, ["--client", "--auto-start", "--wait-ready",
                                       str(DEADLINE), "--cycles", "2"])
        assert rc == 0, f"exit status {rc}:\n" + "\n".join(lines)
        expect(lines, r"attached to .*vhost0 \(client\)", r"frontend ready on 1 device",
               r"failed cycles: 0", r"^cycles: 2 ok, 0 failed$")
    finally:
        fe.stop()
        wd.close()


def case_driver_socket(args):
    """A device the driver serves on its own socket (devarg vhost_socket,
    here as a client of a frontend that listens: vhost_client=1): the app
    lists it as attached there, refuses to attach or detach it, and drives
    it like any other (--wait-ready, cycles); at exit the driver closes the
    connection (its remove)."""
    wd = Workdir("mlx5a-e2e-")
    sock = wd.file("own")
    fe = start_frontend(wd, "own", server=True)
    try:
        until(lambda: os.path.exists(sock), bool, DEADLINE, f"socket {sock} from the frontend",
              alive=fe.alive)
        s = script(wd, "attach 0\ndetach 0\ndetach all\nshow device 0\nlist\n")
        vdev = f"{VDEV},vhost_socket={sock},vhost_client=1"
        rc, lines = run_app(args, wd, ["--auto-start", "--wait-ready", str(DEADLINE), "--cmdline-file", s,
                                       "--cycles", "2"], vdevs=[vdev])
        assert rc == 0, f"exit status {rc}:\n" + "\n".join(lines)
        q = re.escape(sock)
        expect(lines, rf"vdpa_mlx5async0: serves vhost-user socket {q} \(client\)",
               rf"vdpa_mlx5async0: served by the driver on {q} \(devarg vhost_socket\): "
               "vdpa-testpmd does not attach it",
               r"frontend ready on 1 device",
               rf"error: vdpa_mlx5async0 is already attached to {q} by the driver",
               rf"error: vdpa_mlx5async0: the driver serves {q} .* vdpa-testpmd does not detach it",
               rf"socket: {q} \(the driver's\)  vid: \d+  frontend: ready",
               rf"vdpa_mlx5async0 .* {q}$",
               r"failed cycles: 0", r"^cycles: 2 ok, 0 failed$",
               # The driver's remove (the app's rte_eal_cleanup) closes its connection.
               rf"\({q}\) free connfd", r"vdpa_mlx5async0: removed")
        assert not any(re.search(r"attached to .*\((server|client)\)$|detached from", l) for l in lines), \
            "the app attached or detached the driver's device:\n" + "\n".join(lines)
    finally:
        fe.stop()
        wd.close()


def case_driver_socket_stale(args):
    """Devarg vhost_socket as a server: a socket file nobody listens on (what
    a host killed with -9 leaves) is removed, with a line saying so, and the
    device serves there; a socket another process listens on refuses the
    probe with an error naming it, and stays its owner's."""
    wd = Workdir("mlx5a-e2e-")
    stale, live = wd.file("stale"), wd.file("live")
    left = socket.socket(socket.AF_UNIX)
    left.bind(stale)
    left.close()
    owner = socket.socket(socket.AF_UNIX)
    owner.bind(live)
    owner.listen(1)
    try:
        rc, lines = run_app(args, wd, ["--cmdline-file", script(wd, "list\n")],
                            vdevs=[f"{VDEV},vhost_socket={stale}"])
        assert rc == 0, f"exit status {rc}:\n" + "\n".join(lines)
        q = re.escape(stale)
        expect(lines, rf"vhost_socket {q}: removed a stale socket nobody listened on",
               rf"vdpa_mlx5async0: serves vhost-user socket {q} \(server\)",
               rf"vdpa_mlx5async0 .* {q}$", r"vdpa_mlx5async0: removed")
        assert not os.path.exists(stale), "the driver's socket was left behind at its remove"
        rc, lines = run_app(args, wd, ["--cmdline-file", script(wd, "list\n")],
                            vdevs=[f"{VDEV},vhost_socket={live}"])
        assert rc != 0, "a probe on a live socket was not refused:\n" + "\n".join(lines)
        expect(lines, rf"vdpa_mlx5async0: vhost_socket: socket {re.escape(live)} is in use: "
               "another process listens on it")
        assert os.path.exists(live), "the live socket was removed"
    finally:
        owner.close()
        wd.close()


def case_serve(args):
    """Nothing to run: the app serves its sockets, prints the state every
    --stats-period seconds and exits cleanly on SIGTERM."""
    wd = Workdir("mlx5a-e2e-")
    app = start_app(args, wd, ["--auto-start", "--stats-period", "1"])
    try:
        app.wait_for(r"^running; ")
        app.wait_for(r"stats for vdpa_mlx5async0", count=2)
        app.p.send_signal(signal.SIGTERM)
        assert app.wait() == 0, "\n".join(app.output())
        expect(app.output(), r"attached to .*vhost0", r"device vdpa_mlx5async0",
               r"stats for vdpa_mlx5async0", r"^cycles: 0 ok, 0 failed$",
               r"detached from .*vhost0")
        assert not os.path.exists(os.path.join(wd.path, "vhost0")), "socket left behind"
    finally:
        app.kill()
        wd.close()


def listening(path):
    """Whether a process listens on unix socket `path` (/proc/net/unix)."""
    with open("/proc/net/unix") as f:
        return any(l.split()[-1] == path and int(l.split()[3], 16) & 0x10000
                   for l in f.readlines()[1:] if len(l.split()) >= 8)


def case_sockets(args):
    """A second app on the same --iface refuses the live socket and leaves it
    to its owner; a socket left by a killed app (kill -9) is replaced, with
    a line saying so; a path too long for a unix socket is refused."""
    wd = Workdir("mlx5a-e2e-")
    sock = os.path.join(wd.path, "vhost0")
    first = start_app(args, wd, ["--auto-start"])
    second = third = None
    try:
        first.wait_for(r"^running; ")
        second = start_app(args, wd, ["--auto-start"])
        assert second.wait() == 1, "\n".join(second.output())
        expect(second.output(), rf"error: socket {re.escape(sock)} is in use: another process listens on it")
        assert listening(sock), "the first app's socket went with the second app"
        os.killpg(first.p.pid, signal.SIGKILL)
        first.p.wait(30)
        assert os.path.exists(sock) and not listening(sock), "no stale socket after kill -9"
        third = start_app(args, wd, ["--auto-start"])
        third.wait_for(r"^running; ")
        expect(third.output(), rf"removed the stale socket {re.escape(sock)} \(nobody listened on it\)",
               r"attached to .*vhost0")
        assert listening(sock)
        third.p.send_signal(signal.SIGTERM)
        assert third.wait() == 0, "\n".join(third.output())
        long_iface = os.path.join(wd.path, "x" * 120)
        rc, lines = run_app(args, wd, ["--iface", long_iface, "--auto-start"])
        assert rc == 1, "\n".join(lines)
        expect(lines, r"error: socket path .* is 1\d\d bytes long; a unix socket path takes at most 107")
    finally:
        for a in (first, second, third):
            if a:
                a.kill()
        wd.close()


def case_completion(args):
    """The prompt on a terminal: Tab completes keywords, device names and
    choices (the cmdline library with the app's token types)."""
    wd = Workdir("mlx5a-e2e-")
    pid, fd = pty.fork()
    if pid == 0:  # child: the app on the pty
        try:
            argv = app_argv(args, wd, unique("app"), ["-i"])
            os.execv(argv[0], argv)
        finally:
            os._exit(127)
    out = b""

    def until(text):
        nonlocal out
        end = time.monotonic() + DEADLINE
        while text not in out:
            assert time.monotonic() < end, f"no {text!r} on the terminal:\n{out.decode()}"
            r, _, _ = select.select([fd], [], [], 0.2)
            if r:
                try:
                    out += os.read(fd, 4096)
                except OSError:  # the app closed the terminal
                    break
        assert text in out, f"no {text!r} on the terminal:\n{out.decode()}"

    try:
        until(b"vdpa> ")
        os.write(fd, b"sho\t")
        until(b"show ")
        os.write(fd, b"d\t")
        until(b"device ")
        os.write(fd, b"vdpa\t")
        until(b"vdpa_mlx5async0 ")
        os.write(fd, b"\r")
        until(b"virtq(s)")
        os.write(fd, b"set strategy all seq\t")
        until(b"sequential ")
        os.write(fd, b"\r")
        until(b"vdpa_mlx5async0: strategy sequential")
        os.write(fd, b"quit\r")
        until(b"cycles: 0 ok, 0 failed")
        _, status = os.waitpid(pid, 0)
        pid = 0
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    finally:
        if pid:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        os.close(fd)
        wd.close()


CASES = {"script": case_script, "cycles": case_cycles, "trace": case_trace,
         "fault": case_fault, "exit-status": case_exit_status, "interactive": case_interactive,
         "multi": case_multi, "client": case_client, "serve": case_serve, "sockets": case_sockets,
         "completion": case_completion, "hung": case_hung, "driver-socket": case_driver_socket,
         "driver-socket-stale": case_driver_socket_stale}

if __name__ == "__main__":
    run_case(CASES, ("--app", {"required": True}), ("--schema", {"required": True}))
