"""The command line of every e2e script: `SCRIPT CASE --option VALUE ...`
runs one case and prints "CASE: ok"; a case that cannot run on this
machine raises Skip and exits 77, which Meson counts as skipped, never as
passed."""
import argparse
import sys


class Skip(Exception):
    """A case that cannot run on this machine (the reason is the message)."""


def run_case(cases, *options, prepare=None):
    """Runs the case of `cases` (name -> function of the parsed arguments)
    named on the command line. `options` are (flag, argparse keyword
    arguments) pairs; `prepare(args)` runs first and may raise Skip too."""
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=sorted(cases))
    for flag, kw in options:
        ap.add_argument(flag, **kw)
    a = ap.parse_args()
    try:
        if prepare:
            prepare(a)
        cases[a.case](a)
    except Skip as e:
        print(f"{a.case}: skipped: {e}")
        sys.exit(77)
    print(f"{a.case}: ok")
