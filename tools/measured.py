#!/usr/bin/python3
"""Measurements in the docs come from commands, never typed.

  measured.py write OUT.json COMMAND    stdin (Markdown) -> OUT.json, with the
                                        command and the commit it ran at
  measured.py report [FILE...]          fills each marked block of the docs
                                        (./run report)
  measured.py check [FILE...]           every marked block names a ./run
                                        command, its tables parse, the
                                        blocks of one name agree, and all
                                        come from one clean commit; no
                                        history wording (a test)

FILE: by default the docs, README.md, doc/*.md and doc/guides/*.md. A
marked block:

  <!-- measured: demo -->
  ...generated: `./run demo` at <commit>, then its Markdown...
  <!-- /measured -->

`demo` names out/demo/summary.json, which `./run demo` writes;
`<!-- measured: migrate devices4 -->` names out/migrate/summary-devices4.json
(`./run migrate --devices 4`); `<!-- measured: bench heuristics -->`, where no
summary-heuristics.json exists, out/bench/heuristics.json (`./run bench`). report fills every block of a name from
that file; where it does not exist (the command was not run in this tree),
from the first doc whose block of that name is filled, so that every doc
shows the same run. report refuses (and writes nothing) where a block would
come from a dirty tree or the blocks from more than one commit: the docs show
one clean commit's measurements."""
import glob
import json
import os
import re
import subprocess
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BLOCK = re.compile(r"(<!-- measured: ([\w-]+)(?: ([\w-]+))? -->\n)(.*?)(<!-- /measured -->)", re.S)
# Wording that tells how the code changed, not what it is (docs describe
# the design as it is; git log holds its history).
HISTORY = re.compile(r"\b(now (?:refuses|does|has|waits|takes|uses|sends)|no longer|used to|previously|"
                     r"formerly|this session|(?:removed|added|fixed)\b[^.\n]{0,40}\bat [0-9a-f]{7,40})\b", re.I)
STAMP = re.compile(r"^`(\./run [\w-]+)[^`]*` at ([0-9a-f]{7,40}(?:-dirty)?)\b", re.M)


def docs():
    """The docs that may hold marked blocks, README first."""
    return [os.path.join(TOP, "README.md")] + sorted(glob.glob(os.path.join(TOP, "doc", "*.md"))) + \
        sorted(glob.glob(os.path.join(TOP, "doc", "guides", "*.md")))


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


def key_of(m):
    """A block's name and variant: 'migrate devices4'."""
    return m.group(2) + (f" {m.group(3)}" if m.group(3) else "")


def rendered(name, variant=None):
    """The block body from out/<name>/summary[-variant].json, else from
    out/<name>/<variant>.json (a data file with the same command, commit
    and markdown keys: out/bench/heuristics.json), or None."""
    paths = [os.path.join(TOP, "out", name, f"summary-{variant}.json" if variant else "summary.json")]
    if variant:
        paths.append(os.path.join(TOP, "out", name, f"{variant}.json"))
    for path in paths:
        try:
            with open(path) as f:
                s = json.load(f)
        except FileNotFoundError:
            continue
        return f"`{s['command']}` at {s['commit']}:\n\n{s['markdown']}\n"
    return None


def read(path):
    with open(path) as f:
        return f.read()


def bodies(files):
    """key -> (body, where from) for every block name of the files: out/'s
    summary, else the first filled block of that name in the files."""
    out = {}
    for path in files:
        for m in BLOCK.finditer(read(path)):
            key = key_of(m)
            if key in out and out[key][0] is not None:
                continue
            body = rendered(m.group(2), m.group(3))
            if body is not None:
                out[key] = (body, f"out/{m.group(2)}")
            elif STAMP.search(m.group(4)):
                out[key] = (m.group(4), os.path.relpath(path, TOP))
            else:
                out.setdefault(key, (None, None))
    return out


def stamp_problems(stamps):
    """stamps: (where, commit) of every block. What keeps them from being
    one clean commit's measurements."""
    bad = [f"{where}: measured at {rev}, a tree with uncommitted changes (commit, then run it again)"
           for where, rev in stamps if rev.endswith("-dirty")]
    revs = {}
    for where, rev in stamps:
        revs.setdefault(rev.removesuffix("-dirty")[:7], []).append(where)
    if len(revs) > 1:
        bad.append("blocks from more than one commit: " +
                   "; ".join(f"{rev}: {', '.join(ws)}" for rev, ws in sorted(revs.items())))
    return bad


def report(files):
    source = bodies(docs() if not files else files)
    stamps = [(f"{key} (from {where})", STAMP.search(body).group(2))
              for key, (body, where) in sorted(source.items()) if body is not None and STAMP.search(body)]
    bad = stamp_problems(stamps)
    if bad:
        for b in bad:
            print(f"report: {b}", file=sys.stderr)
        print("report: nothing written", file=sys.stderr)
        return 1
    for path in files or docs():
        text = read(path)
        new = BLOCK.sub(lambda m: m.group(1) + (source[key_of(m)][0] or m.group(4)) + m.group(5), text)
        if new != text:
            with open(path, "w") as f:
                f.write(new)
    for key, (body, where) in sorted(source.items()):
        name = key.split()[0]
        if body is None:
            print(f"report: {key}: no out/{name} summary and no filled block (run ./run {name})", file=sys.stderr)
        elif not where.startswith("out/"):
            print(f"report: {key}: no out/{name} summary (run ./run {name}); every block as in {where}",
                  file=sys.stderr)
    return 0


def run_commands():
    """The ./run subcommands (its usage line)."""
    m = re.search(r"usage: \./run ([\w|-]+)", read(os.path.join(TOP, "run")))
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


def block_problems(where, name, body, commands):
    """What is wrong with one block: an unknown command, no stamp, a table
    that does not parse."""
    bad = []
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
    return bad


def check(files):
    bad, blocks, seen, stamps = [], 0, {}, []
    commands = run_commands()
    for path in files or docs():
        text = read(path)
        for m in HISTORY.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            bad.append(f"{os.path.relpath(path, TOP)}:{line}: history wording '{m.group(0)}' "
                       "(say what the design is; git log has how it changed)")
        for m in BLOCK.finditer(text):
            blocks += 1
            where = f"{os.path.relpath(path, TOP)}: block {key_of(m)}"
            bad += block_problems(where, m.group(2), m.group(4), commands)
            stamp = STAMP.search(m.group(4))
            if stamp:
                stamps.append((where, stamp.group(2)))
            first = seen.setdefault(key_of(m), (where, m.group(4)))
            if first[1] != m.group(4):
                bad.append(f"{where}: differs from {first[0]} (./run report makes them one)")
    bad += stamp_problems(stamps)
    for b in bad:
        print(b)
    print(f"measured: {blocks} blocks, {len(bad)} problems")
    return 1 if bad or not blocks else 0


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "write":
        write_summary(sys.argv[2], sys.argv[3], sys.stdin.read())
    elif len(sys.argv) >= 2 and sys.argv[1] == "report":
        sys.exit(report(sys.argv[2:]))
    elif len(sys.argv) >= 2 and sys.argv[1] == "check":
        sys.exit(check(sys.argv[2:]))
    else:
        sys.exit(__doc__)
