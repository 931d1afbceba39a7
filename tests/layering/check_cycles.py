#!/usr/bin/env python3
"""No include cycles: the graph of the project's C and C++ modules (a module
is a file's path without its extension: foo.hpp and foo.cpp are one module)
has no cycle, inside a folder or across folders. A module `foo_impl` is the
private half of `foo` (its pimpl) and counts as `foo`. An edge runs from a
module to each module whose header one of its files includes by a quoted
path that names a project file; check_layers.py checks which folders may
include which.

  check_cycles.py SOURCE_ROOT
  check_cycles.py --self-test   a tree with a cycle is refused, one with a
                                pimpl pair is not
"""
import os
import re
import sys
import tempfile

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
SOURCES = (".c", ".cpp", ".h", ".hpp")
TOPS = ("app", "bench", "drivers", "include", "testkit", "tests")
# Where a quoted include is looked up, after the including file's folder.
INCLUDE_DIRS = ("drivers", "include/mlx5async", "include/mlx5emu", "")


def module_of(rel):
    stem = os.path.splitext(rel)[0]
    return stem[:-len("_impl")] if stem.endswith("_impl") else stem


def graph(root):
    """module -> {module: 'file:line: #include ...' of its first edge}, and
    how many files were read."""
    edges, files = {}, 0
    for top in TOPS:
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if not name.endswith(SOURCES):
                    continue
                files += 1
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                src = module_of(rel)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for lineno, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        for base in [dirpath] + [os.path.join(root, d) for d in INCLUDE_DIRS]:
                            target = os.path.normpath(os.path.join(base, m.group(1)))
                            if os.path.isfile(target):
                                dst = module_of(os.path.relpath(target, root))
                                if dst != src:
                                    edges.setdefault(src, {}).setdefault(
                                        dst, f"{rel}:{lineno}: #include \"{m.group(1)}\"")
                                break
    return edges, files


def cycles(edges):
    """The strongly connected components of more than one module (Tarjan's
    algorithm, iterative)."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    nodes = sorted(set(edges) | {d for ds in edges.values() for d in ds})
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, {}))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges.get(w, {})))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def self_test():
    with tempfile.TemporaryDirectory() as root:
        def write(rel, *includes):
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write("".join(f'#include "{i}"\n' for i in includes))
        write("drivers/x/engine.hpp")
        write("drivers/x/engine_impl.hpp", "engine.hpp")
        write("drivers/x/engine.cpp", "engine_impl.hpp", "config.hpp")
        write("drivers/x/config.hpp")
        write("drivers/x/config.cpp", "config.hpp", "backend.hpp")
        write("drivers/x/backend.hpp", "config.hpp")
        edges, _ = graph(root)
        found = cycles(edges)
        assert found == [["drivers/x/backend", "drivers/x/config"]], found
        print(f"self-test: the cycle {found[0]} is found, the pimpl pair is not a cycle")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = sys.argv[1]
    edges, files = graph(root)
    if files < 100:
        print(f"only {files} files found under {root}: wrong source root?")
        return 1
    found = cycles(edges)
    for comp in found:
        print("include cycle: " + " <-> ".join(comp))
        for a in comp:
            for b, where in sorted(edges.get(a, {}).items()):
                if b in comp:
                    print(f"  {where}")
    n_edges = sum(len(d) for d in edges.values())
    print(f"include cycles: {files} files, {n_edges} edges, {len(found)} cycles")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
