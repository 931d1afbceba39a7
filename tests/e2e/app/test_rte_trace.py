#!/usr/bin/python3
"""The PMD's rte_trace points end to end: vdpa-testpmd with EAL's
--trace=pmd.vdpa.mlx5async.* runs cycles against Debian's dpdk-testpmd as
the frontend, and the CTF trace EAL writes at exit is read back with
Debian's babeltrace2. Every batch submitted returns, every command issued
completes, each command type completes as often as the PMD's latency
histograms counted it (--json, before the exit's device stop), and the
start's and the stop's ledger phases are in it.

  test_rte_trace.py CASE --app build/app/vdpa-testpmd/vdpa-testpmd --schema FILE
"""
import collections
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from app_lib import DEADLINE, VQS, with_frontend  # noqa: E402
from check_json import validate  # noqa: E402
from harness.cases import run_case  # noqa: E402
from harness.proc import Workdir  # noqa: E402

EVENT = re.compile(r" (pmd\.vdpa\.mlx5async\.[\w.]+): ")
FIELD = re.compile(r"(\w+) = (\"[^\"]*\"|-?[\w.]+)")


def read_ctf(folder):
    """[(event name, {field: value})] of the trace under `folder`, in order."""
    dirs = [d for d, _, files in os.walk(folder) if "metadata" in files]
    assert len(dirs) == 1, f"one CTF trace under {folder}: {dirs}"
    p = subprocess.run(["babeltrace2", dirs[0]], capture_output=True, text=True,
                       timeout=DEADLINE)
    assert p.returncode == 0, p.stderr[-2000:]
    events = []
    for line in p.stdout.splitlines():
        m = EVENT.search(line)
        if not m:
            continue
        fields = {}
        for k, v in FIELD.findall(line[m.end():]):
            fields[k] = v[1:-1] if v.startswith('"') else int(v, 0)
        events.append((m.group(1), fields))
    return events


def case_ctf(args):
    assert shutil.which("babeltrace2"), "babeltrace2 is not installed (tools/setup installs it)"
    wd = Workdir("mlx5a-e2e-")
    try:
        traces = wd.file("traces")
        res = wd.file("r.json")
        rc, lines = with_frontend(
            args, wd, ["--auto-start", "--wait-ready", str(DEADLINE), "--cycles", "3", "--json", res],
            eal_opts=["--trace=pmd.vdpa.mlx5async.*", f"--trace-dir={traces}"])
        assert rc == 0, f"exit status {rc}:\n" + "\n".join(lines)
        with open(res) as f:
            doc = json.load(f)
        with open(args.schema) as f:
            errs = validate(doc, json.load(f))
        assert not errs, errs
        events = read_ctf(traces)
        names = collections.Counter(n for n, _ in events)
        assert names["pmd.vdpa.mlx5async.batch.submit"] > 0, names
        assert names["pmd.vdpa.mlx5async.batch.submit"] == names["pmd.vdpa.mlx5async.batch.return"], names
        issued = collections.Counter(f["type"] for n, f in events if n.endswith(".cmd.issue"))
        completed = collections.Counter(f["type"] for n, f in events if n.endswith(".cmd.complete"))
        assert issued == completed, (issued, completed)
        assert all(f["dev"] == "vdpa_mlx5async0" for _, f in events), {f.get("dev") for _, f in events}
        # What the trace saw completing before the app's exit stopped the
        # device (its first stop: cycles suspend through the API) is what
        # the histograms counted when the app wrote its results.
        stop = next((i for i, (n, f) in enumerate(events)
                     if n.endswith(".ledger.phase") and f["phase"] == "stop_requested"), len(events))
        assert stop < len(events), "the exit's device stop is in the trace"
        before = collections.Counter(f["type"] for n, f in events[:stop] if n.endswith(".cmd.complete"))
        [lat] = doc["latency"]
        counted = {c["type"]: c["count"] for c in lat["commands"]}
        assert dict(before) == counted, (before, counted)
        after = collections.Counter(f["type"] for n, f in events[stop:] if n.endswith(".cmd.complete"))
        assert after["query_virtq"] == VQS and after["modify_virtq"] >= VQS, after  # the stop's suspend
        assert completed["query_virtq"] >= 3 * VQS and completed["modify_virtq"] >= 2 * 3 * VQS, completed
        done = [f for n, f in events if n.endswith(".cmd.complete")]
        assert all(f["status"] == 0 and f["err"] == 0 and f["latency_ns"] > 0 for f in done), done[:3]
        # A suspend's MODIFY and QUERY name every virtq.
        assert {f["queue"] for f in done if f["type"] == "query_virtq"} == set(range(VQS))
        kinds = {f["batch"] for n, f in events if n.endswith(".batch.submit")}
        assert {"setup", "resume", "suspend"} <= kinds, kinds
        phases = [f["phase"] for n, f in events if n.endswith(".ledger.phase")]
        for p in ("start_requested", "memory_registered", "virtqs_created", "all_ready"):
            assert p in phases, phases
        stamps = [f["mono_ns"] for n, f in events if n.endswith(".ledger.phase") and f["seq"] == 1
                  and f["phase"] in ("start_requested", "virtqs_created", "all_ready")]
        assert stamps == sorted(stamps), stamps
    finally:
        wd.close()


CASES = {"ctf": case_ctf}

if __name__ == "__main__":
    run_case(CASES, ("--app", {"required": True}), ("--schema", {"required": True}))
