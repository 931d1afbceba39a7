#!/usr/bin/env python3
"""Counts test cases in Meson's JUnit logs (GoogleTest subtests included) and
prints 'LABEL: N passed, N failed' last (LABEL: tests, or --label), skipped
cases on the line before.
Exit 1 when any failed or when nothing ran.

  test_summary.py [--label LABEL] JUNIT.xml...
"""
import sys
import xml.etree.ElementTree as ET

def main(paths, label="tests"):
    roots = []
    for path in paths:
        try:
            roots.append(ET.parse(path).getroot())
        except (OSError, ET.ParseError) as e:
            print(f"test_summary: cannot read {path}: {e}")
            print(f"{label}: 0 passed, 1 failed")
            return 1
    passed = failed = skipped = 0
    failures = []
    for suite in (s for root in roots for s in root.iter("testsuite")):
        for case in suite.iter("testcase"):
            name = f"{suite.get('name')}/{case.get('classname', '')}.{case.get('name')}"
            if case.find("failure") is not None or case.find("error") is not None:
                failed += 1
                failures.append(name)
            elif case.find("skipped") is not None:
                skipped += 1
            else:
                passed += 1
    for f in failures:
        print(f"FAILED: {f}")
    if skipped:
        print(f"{label}: {skipped} skipped (the reason is in each test's log)")
    print(f"{label}: {passed} passed, {failed} failed")
    return 1 if failed or passed == 0 else 0

if __name__ == "__main__":
    args = sys.argv[1:]
    label = "tests"
    if args[:1] == ["--label"]:
        label, args = args[1], args[2:]
    sys.exit(main(args, label))
