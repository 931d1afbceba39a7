#!/usr/bin/python3
"""Prints one-line deb-src entries for the archives the system's apt uses
(its 'deb' entries in /etc/apt/sources.list and /etc/apt/sources.list.d/,
one-line '.list' and deb822 '.sources' alike), for tools/setup's private
apt configuration. The system's files are only read.

The deb822 files are parsed by python3-debian (tools/setup installs it
before it runs this); a one-line entry is `deb [options] URI SUITE
COMPONENT...`, split as sources.list(5) says."""
import glob
import os
import sys

from debian.deb822 import Deb822

APT = "/etc/apt"


def one_line(path):
    with open(path, errors="replace") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line.startswith("deb "):
                continue
            rest = line[4:].strip()
            opts = ""
            if rest.startswith("["):
                end = rest.index("]") + 1
                opts, rest = rest[:end] + " ", rest[end:].strip()
            yield f"deb-src {opts}{rest}"


def deb822(path):
    """deb-src lines of the enabled 'deb' stanzas; Signed-By carried over
    when it names a keyring file (an inline key has no one-line form)."""
    with open(path, errors="replace") as f:
        for stanza in Deb822.iter_paragraphs(f):
            if "deb" not in stanza.get("Types", "").split() or stanza.get("Enabled", "yes").lower() == "no":
                continue
            signed_by = stanza.get("Signed-By", "").strip()
            opts = f"[signed-by={signed_by}] " if signed_by.startswith("/") else ""
            components = " ".join(stanza.get("Components", "").split())  # folded lines
            for uri in stanza.get("URIs", "").split():
                for suite in stanza.get("Suites", "").split():
                    yield f"deb-src {opts}{uri} {suite} {components}".rstrip()


def main():
    files = [os.path.join(APT, "sources.list")] + sorted(glob.glob(os.path.join(APT, "sources.list.d", "*.list")))
    out = []
    for f in files:
        if os.path.isfile(f):
            out += one_line(f)
    for f in sorted(glob.glob(os.path.join(APT, "sources.list.d", "*.sources"))):
        out += deb822(f)
    for line in dict.fromkeys(out):  # first occurrence of each, in order
        print(line)
    return 0 if out else 1


if __name__ == "__main__":
    sys.exit(main())
