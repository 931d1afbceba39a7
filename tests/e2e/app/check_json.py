#!/usr/bin/env python3
"""Checks vdpa-testpmd output files with the Python standard library only.

validate(): the subset of JSON Schema (2020-12) that results.schema.json
uses: type, const, enum, required, properties, additionalProperties (false),
items, minimum. Unknown keywords are an error, so the schema cannot silently
use something this checker skips.

check_trace(): a Chrome trace event file as vdpa-testpmd writes it, with
the complete events of each track properly nested.

  check_json.py results SCHEMA FILE   validate FILE against SCHEMA
  check_json.py trace FILE            check the trace, print its counts
"""
import json
import sys

_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}
_ANNOTATIONS = {"$schema", "$id", "title", "description"}
_KNOWN = _ANNOTATIONS | {"type", "const", "enum", "required", "properties",
                         "additionalProperties", "items", "minimum"}


def validate(inst, schema, path="$"):
    """Returns a list of "path: problem" strings, empty when inst is valid."""
    errs = []
    unknown = set(schema) - _KNOWN
    if unknown:
        return [f"{path}: schema uses unsupported keywords {sorted(unknown)}"]
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_TYPES[t](inst) for t in types):
            return [f"{path}: {inst!r} is not of type {types}"]
    if "const" in schema and inst != schema["const"]:
        errs.append(f"{path}: {inst!r} != const {schema['const']!r}")
    if "enum" in schema and inst not in schema["enum"]:
        errs.append(f"{path}: {inst!r} not in {schema['enum']}")
    if "minimum" in schema and _TYPES["number"](inst) and inst < schema["minimum"]:
        errs.append(f"{path}: {inst!r} < minimum {schema['minimum']}")
    if isinstance(inst, dict):
        for k in schema.get("required", []):
            if k not in inst:
                errs.append(f"{path}: missing required {k!r}")
        props = schema.get("properties", {})
        for k, v in inst.items():
            if k in props:
                errs += validate(v, props[k], f"{path}.{k}")
            elif schema.get("additionalProperties", True) is False:
                errs.append(f"{path}: unexpected property {k!r}")
    if isinstance(inst, list) and "items" in schema:
        for i, v in enumerate(inst):
            errs += validate(v, schema["items"], f"{path}[{i}]")
    return errs


def check_trace(path):
    """Loads a trace; raises AssertionError on a malformed one. Returns
    {"fw": [fw events], "phases": [...], "ops": [...], "meta": [...],
     "other": dict from otherData}."""
    with open(path) as f:
        doc = json.load(f)
    assert isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list), \
        "not a trace event object"
    out = {"fw": [], "phases": [], "ops": [], "meta": [], "other": doc.get("otherData", {})}
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
        else:
            raise AssertionError(f"{where}: unknown category {cat!r}")
    _check_nesting(out["fw"] + out["phases"] + out["ops"])
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
