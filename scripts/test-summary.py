#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The end of the README's test command (scripts/quickstart-test.sh): one summary per
stage from ctest's JUnit file (ctest --output-junit), the tests that were skipped and
why, the ten slowest tests over all stages, and the verdict.

A test that lacks what it needs exits 77 with a "SKIP: <why>" line, and CTest reports it
as skipped (SKIP_RETURN_CODE, tests/Mini5dTests.cmake), never as passed. A test whose
fixture failed is "Not Run" too, but that is a failure (ctest counts it as one), listed
with the failures.

usage: test-summary.py [--ci] [--allow-skip NAME]... STAGE=JUNIT.xml...
  STAGE=JUNIT.xml  a stage's name and its JUnit file; a file that does not exist is a
                   stage that did not get to run its tests (a failed build), a failure.
  --ci             skips fail the run too (CI=true in quickstart-test.sh: the README's
                   set-up installs what the tests need), but for the --allow-skip ones.
  --allow-skip     a test that may skip under --ci (what it needs is no package the
                   set-up installs); may be repeated.
  exit 0: every stage ran and nothing failed (nor, under --ci, skipped); 1 otherwise.
"""
import os
import sys
import xml.etree.ElementTree as ET

FIXTURE_FAILED = "Fixture dependency failed"


def reason_of(case, skipped):
    """The test's own SKIP line, or CTest's message."""
    out = case.findtext("system-out") or ""
    for line in out.splitlines():
        if line.strip().lower().startswith(("skip:", "skipped:")):
            return line.strip()
    return skipped.get("message") or "no reason printed"


def read_stage(path):
    """{passed, failed: [(name, why)], skipped: [(name, why)], times: [(seconds, name)]}."""
    s = {"passed": 0, "failed": [], "skipped": [], "times": []}
    for case in ET.parse(path).getroot().iter("testcase"):
        name = case.get("name")
        s["times"].append((float(case.get("time") or 0), name))
        skipped = case.find("skipped")
        if case.find("failure") is not None or case.get("status") == "fail":
            s["failed"].append((name, "failed"))
        elif skipped is not None or case.get("status") in ("notrun", "disabled"):
            why = reason_of(case, skipped if skipped is not None else case)
            if FIXTURE_FAILED in why or why.startswith("Failed test dependencies"):
                s["failed"].append((name, "not run: a fixture it needs failed"))
            else:
                s["skipped"].append((name, why))
        else:
            s["passed"] += 1
    return s


def parse_args(argv):
    ci, allowed, stages = False, set(), []
    it = iter(argv)
    for a in it:
        if a == "--ci":
            ci = True
        elif a == "--allow-skip":
            allowed.add(next(it, ""))
        elif "=" in a and not a.startswith("-"):
            stages.append(tuple(a.split("=", 1)))
        else:
            return None
    return (ci, allowed, stages) if stages else None


def main(argv):
    args = parse_args(argv)
    if args is None:
        print(next(l for l in __doc__.splitlines() if l.startswith("usage:")), file=sys.stderr)
        return 2
    ci, allowed, stages = args
    ok, times, refused = True, [], []
    print("\n== test summary ==")
    for stage, path in stages:
        if not os.path.exists(path):
            print(f"{stage}: did not run its tests (no {path}: its build or set-up failed, see above)")
            ok = False
            continue
        s = read_stage(path)
        total = s["passed"] + len(s["failed"]) + len(s["skipped"])
        print(f"{stage}: {s['passed']} passed, {len(s['failed'])} failed, {len(s['skipped'])} skipped, "
              f"of {total} ({path})")
        for name, why in s["failed"]:
            print(f"  FAILED   {name} ({why})")
        for name, why in s["skipped"]:
            print(f"  skipped  {name}: {why}")
            if ci and name not in allowed:
                refused.append(f"{stage}: {name}")
        ok = ok and not s["failed"]
        times += [(t, name, stage) for t, name in s["times"]]
    if times:
        print("ten slowest tests:")
        for t, name, stage in sorted(times, reverse=True)[:10]:
            print(f"  {t:8.1f} s  {name} ({stage})")
    if refused:
        print(f"CI=true: {len(refused)} test(s) skipped that the README's set-up should let run: "
              + ", ".join(refused))
        ok = False
    print("verdict: " + ("every stage passed" if ok else "FAILED (see above)"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
