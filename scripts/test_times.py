#!/usr/bin/env python3
"""Where a test run's time went, per file, from the JUnit XML that `TEST_REPORT_DIR=dir make test`
leaves (one file per tier). Usage: scripts/test_times.py dir/tier1.xml [--top N]

A file's time is the sum of its tests' times (setup, call and teardown, as pytest reports
them): with two workers the wall time is about half the total, the browser group being one
unit that one worker runs alone (two units of about half of it each with four workers)."""

from __future__ import annotations

import argparse
import collections
import xml.etree.ElementTree as ET


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report")
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args()
    per_file: dict[str, float] = collections.defaultdict(float)
    counts: dict[str, int] = collections.Counter()
    for case in ET.parse(args.report).getroot().iter("testcase"):
        name = case.get("classname", "").replace(".", "/")
        # classname is the module path, plus the class for tests in a class.
        path = name if name.rsplit("/", 1)[-1].startswith("test_") else name.rsplit("/", 1)[0]
        per_file[path + ".py"] += float(case.get("time") or 0)
        counts[path + ".py"] += 1
    total = sum(per_file.values())
    browser = sum(t for f, t in per_file.items() if f.startswith("tests/ui/") or "browser" in f.rsplit("/", 1)[-1])
    print(f"{total:8.1f} s in {sum(counts.values())} tests, {len(per_file)} files; browser group {browser:.1f} s")
    for path, seconds in sorted(per_file.items(), key=lambda kv: -kv[1])[: args.top]:
        print(f"{seconds:8.1f} s  {counts[path]:4d}  {path}")


if __name__ == "__main__":
    main()
