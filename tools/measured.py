#!/usr/bin/env python3
"""Measurements in the docs come from commands, never typed.

  measured.py write OUT.json COMMAND    stdin (Markdown) -> OUT.json, with the
                                        command and the commit it ran at
  measured.py report FILE...            fills each marked block of FILE from
                                        out/<name>/summary.json (./run report)
  measured.py check FILE...             every marked block names a ./run
                                        command and its tables parse (a test)

A marked block:

  <!-- measured: demo -->
  ...generated: `./run demo` at <commit>, then its Markdown...
  <!-- /measured -->

`demo` names out/demo/summary.json, which `./run demo` writes;
`<!-- measured: migrate devices4 -->` names out/migrate/summary-devices4.json
(`./run migrate --devices 4`)."""
import json
import os
import re
import subprocess
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BLOCK = re.compile(r"(<!-- measured: ([\w-]+)(?: ([\w-]+))? -->\n)(.*?)(<!-- /measured -->)", re.S)
STAMP = re.compile(r"^`(\./run [\w-]+)[^`]*` at ([0-9a-f]{7,40}(?:-dirty)?)\b", re.M)


def commit():
    try:
        rev = subprocess.run(["git", "-C", TOP, "rev-parse", "--short=12", "HEAD"], capture_output=True,
                             text=True, check=True).stdout.strip()
        # The docs this tool writes do not make the code dirty.
        dirty = subprocess.run(["git", "-C", TOP, "status", "--porcelain", "--untracked-files=no", "--",
                                ".", ":(exclude)README.md", ":(exclude)doc"],
                               capture_output=True, text=True).stdout.strip()
        return rev + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def write_summary(path, command, markdown):
    """out/<name>/summary.json: what `command` printed, and its commit."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump({"command": command, "commit": commit(), "markdown": markdown.strip()}, f, indent=1)


def render(name, variant=None):
    path = os.path.join(TOP, "out", name, f"summary-{variant}.json" if variant else "summary.json")
    with open(path) as f:
        s = json.load(f)
    return f"`{s['command']}` at {s['commit']}:\n\n{s['markdown']}\n"


def report(files):
    for path in files:
        with open(path) as f:
            text = f.read()
        missing = []

        def fill(m):
            try:
                return m.group(1) + render(m.group(2), m.group(3)) + m.group(5)
            except FileNotFoundError:
                missing.append(m.group(2) + (f" {m.group(3)}" if m.group(3) else ""))
                return m.group(0)
        text = BLOCK.sub(fill, text)
        with open(path, "w") as f:
            f.write(text)
        for name in missing:
            print(f"report: {path}: no out/{name}/summary.json (run ./run {name}); block kept",
                  file=sys.stderr)


def run_commands():
    """The ./run subcommands (its usage line)."""
    with open(os.path.join(TOP, "run")) as f:
        m = re.search(r"usage: \./run ([\w|-]+)", f.read())
    return set(m.group(1).split("|")) if m else set()


def tables(md):
    """The Markdown tables of `md`: lists of rows (cells)."""
    out, cur = [], []
    for line in md.splitlines() + [""]:
        if line.startswith("|"):
            cur.append([c.strip() for c in line.strip().strip("|").split("|")])
        elif cur:
            out.append(cur)
            cur = []
    return out


def check(files):
    bad, blocks = [], 0
    commands = run_commands()
    for path in files:
        with open(path) as f:
            text = f.read()
        for m in BLOCK.finditer(text):
            blocks += 1
            name, body = m.group(2), m.group(4)
            where = f"{os.path.relpath(path, TOP)}: block {name}"
            if name not in commands:
                bad.append(f"{where}: ./run has no command {name} ({sorted(commands)})")
            stamp = STAMP.search(body)
            if not stamp:
                bad.append(f"{where}: no '`./run ...` at <commit>' line")
            elif stamp.group(1) != f"./run {name}":
                bad.append(f"{where}: made by {stamp.group(1)}, not ./run {name}")
            ts = tables(body)
            if not ts:
                bad.append(f"{where}: no table")
            for t in ts:
                if len(t) < 3 or not all(re.fullmatch(r":?-+:?", c) for c in t[1]):
                    bad.append(f"{where}: a table without header, separator and rows: {t[:2]}")
                    continue
                widths = {len(r) for r in t}
                if len(widths) != 1:
                    bad.append(f"{where}: rows of {sorted(widths)} cells in one table ({t[0]})")
    for b in bad:
        print(b)
    print(f"measured: {blocks} blocks, {len(bad)} problems")
    return 1 if bad or not blocks else 0


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "write":
        write_summary(sys.argv[2], sys.argv[3], sys.stdin.read())
    elif len(sys.argv) >= 3 and sys.argv[1] == "report":
        report(sys.argv[2:])
    elif len(sys.argv) >= 3 and sys.argv[1] == "check":
        sys.exit(check(sys.argv[2:]))
    else:
        sys.exit(__doc__)
