#!/usr/bin/python3
"""Checks vdpa-testpmd output files.

validate(): a results file against app/vdpa-testpmd/results.schema.json
(JSON Schema 2020-12), with python3-jsonschema; the schema itself is
checked against the meta-schema first.

check_trace(): a Chrome trace event file as vdpa-testpmd writes it, with
the complete events of each track properly nested (which no schema says).

  check_json.py results SCHEMA FILE   validate FILE against SCHEMA
  check_json.py trace FILE            check the trace, print its counts
"""
import json
import sys

from jsonschema import Draft202012Validator


def validate(inst, schema):
    """Returns a list of "path: problem" strings, empty when inst is valid."""
    Draft202012Validator.check_schema(schema)
    errors = Draft202012Validator(schema).iter_errors(inst)
    return [f"{e.json_path}: {e.message}" for e in sorted(errors, key=lambda e: e.json_path)]


# The downtime ledger's tracks: a span per device stop or start, and in it a
# span per phase reached (app/vdpa-testpmd/trace.cpp, add_ledger).
LEDGER_SPANS = {"device stop", "device start", "suspend_issued", "suspend_done", "bases_handed_back",
                "used_rings_logged", "memory_registered", "virtqs_created", "all_ready", "conf_returned",
                "notifiers_set", "announced", "device_announced"}


def check_trace(path):
    """Loads a trace; raises AssertionError on a malformed one. Returns
    {"fw": [fw events], "phases": [...], "ops": [...], "ledger": [...],
     "meta": [...], "other": dict from otherData}."""
    with open(path) as f:
        doc = json.load(f)
    assert isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list), \
        "not a trace event object"
    out = {"fw": [], "phases": [], "ops": [], "ledger": [], "meta": [], "other": doc.get("otherData", {})}
    for i, e in enumerate(doc["traceEvents"]):
        where = f"traceEvents[{i}]"
        assert isinstance(e, dict) and e.get("ph") in ("X", "M"), f"{where}: bad event {e!r}"
        for k, t in (("name", str), ("pid", int), ("tid", int)):
            assert isinstance(e.get(k), t), f"{where}: {k} missing or not {t.__name__}"
        if e["ph"] == "M":
            assert isinstance(e.get("args", {}).get("name", ""), str), f"{where}: bad metadata"
            out["meta"].append(e)
            continue
        for k in ("ts", "dur"):
            assert isinstance(e.get(k), (int, float)), f"{where}: {k} missing"
        assert e["dur"] >= 0, f"{where}: negative duration"
        assert isinstance(e.get("args"), dict), f"{where}: args missing"
        cat = e.get("cat")
        if cat == "fw":
            assert isinstance(e["args"].get("status"), str), f"{where}: command without status"
            out["fw"].append(e)
        elif cat == "phase":
            assert e["name"] in ("prepare", "firmware", "vhost"), f"{where}: unknown phase"
            out["phases"].append(e)
        elif cat == "op":
            assert e["name"] in ("suspend", "resume"), f"{where}: unknown op"
            out["ops"].append(e)
        elif cat == "ledger":
            assert e["name"] in LEDGER_SPANS, f"{where}: unknown ledger span {e['name']!r}"
            out["ledger"].append(e)
        else:
            raise AssertionError(f"{where}: unknown category {cat!r}")
    _check_nesting(out["fw"] + out["phases"] + out["ops"] + out["ledger"])
    return out


def _check_nesting(events):
    """Complete events of one track (pid, tid) must nest or follow each other,
    as trace viewers draw them; compared in integer nanoseconds."""
    def ns(x):
        return round(x * 1000)
    tracks = {}
    for e in events:
        tracks.setdefault((e["pid"], e["tid"]), []).append(e)
    for key, evs in tracks.items():
        evs.sort(key=lambda e: (ns(e["ts"]), -ns(e["dur"])))
        stack = []
        for e in evs:
            begin, end = ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])
            while stack and stack[-1][1] <= begin:
                stack.pop()
            assert not stack or end <= stack[-1][1], \
                f"track {key}: {e['name']} at {e['ts']} overlaps {stack[-1][2]} partially"
            stack.append((begin, end, e["name"]))


def main(argv):
    if len(argv) == 4 and argv[1] == "results":
        with open(argv[2]) as f:
            schema = json.load(f)
        with open(argv[3]) as f:
            inst = json.load(f)
        errs = validate(inst, schema)
        for e in errs:
            print(e)
        print(f"{argv[3]}: {'valid' if not errs else 'INVALID'}")
        return 1 if errs else 0
    if len(argv) == 3 and argv[1] == "trace":
        t = check_trace(argv[2])
        print(f"{argv[2]}: {len(t['fw'])} command spans, {len(t['ops'])} operations, "
              f"{len(t['phases'])} phases")
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
