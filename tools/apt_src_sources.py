#!/usr/bin/env python3
"""Prints one-line deb-src entries for the archives the system's apt uses
(its 'deb' entries in /etc/apt/sources.list and /etc/apt/sources.list.d/,
one-line '.list' and deb822 '.sources' alike), for tools/setup's private
apt configuration. The system's files are only read."""
import glob
import os
import sys

APT = "/etc/apt"


def one_line(path):
    for line in open(path, errors="replace"):
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
    for stanza in open(path, errors="replace").read().split("\n\n"):
        fields, key = {}, None
        for line in stanza.splitlines():
            if line.startswith("#") or not line.strip():
                continue
            if line[0].isspace() and key:
                fields[key] += " " + line.strip()
                continue
            key, _, value = line.partition(":")
            key = key.strip().lower()
            fields[key] = value.strip()
        if "deb" not in fields.get("types", "").split() or fields.get("enabled", "yes").lower() == "no":
            continue
        opts = f"[signed-by={fields['signed-by']}] " if fields.get("signed-by", "").startswith("/") else ""
        for uri in fields.get("uris", "").split():
            for suite in fields.get("suites", "").split():
                yield f"deb-src {opts}{uri} {suite} {fields.get('components', '')}".rstrip()


def main():
    files = [os.path.join(APT, "sources.list")] + sorted(glob.glob(os.path.join(APT, "sources.list.d", "*.list")))
    out = []
    for f in files:
        if os.path.isfile(f):
            out += one_line(f)
    for f in sorted(glob.glob(os.path.join(APT, "sources.list.d", "*.sources"))):
        out += deb822(f)
    seen = set()
    for line in out:
        if line not in seen:
            seen.add(line)
            print(line)
    return 0 if out else 1


if __name__ == "__main__":
    sys.exit(main())
