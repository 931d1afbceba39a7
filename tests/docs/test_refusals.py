#!/usr/bin/python3
"""docs-measured must fail on a bad block: tools/measured.py check refuses
each doc of tests/docs/refused/ (exit status 1) and says why.

  test_refusals.py MEASURED_PY REFUSED_DIR"""
import os
import subprocess
import sys

# doc -> what the refusal says
REFUSALS = {
    "unknown-command.md": "./run has no command nosuch",
    "ragged-table.md": "rows of [2, 3] cells in one table",
    "disagreeing-blocks.md": "differs from",
    "dirty-tree.md": "a tree with uncommitted changes",
    "two-commits.md": "blocks from more than one commit",
    "history-wording.md": "history wording 'no longer'",
}


def main(measured, folder):
    for doc, why in REFUSALS.items():
        p = subprocess.run([sys.executable, measured, "check", os.path.join(folder, doc)],
                           capture_output=True, text=True, timeout=60)
        out = p.stdout + p.stderr
        assert p.returncode == 1 and why in out, f"{doc}: exit {p.returncode}, expected '{why}':\n{out}"
        print(f"{doc}: refused ({why})")


if __name__ == "__main__":
    main(*sys.argv[1:])
