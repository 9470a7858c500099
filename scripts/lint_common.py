# SPDX-License-Identifier: BSD-3-Clause
"""What the project's C++ lints (lint-device.py, lint-nan-compare.py, lint-deck-strings.py)
share around their rules: the command line, which files a run reads, the scan of each
file's stripped text, and the self-test against known-bad snippets."""
import os
import re
import sys

from lint_device_rules import strip  # comments and strings blanked, offsets kept


def source_files(paths, expect, exts):
    """The files under `paths` whose names end in `exts`. In a directory, files and
    folders named *_bad (the lints' known-bad snippets) are left out unless `expect`."""
    files = []
    for p in paths:
        if os.path.isdir(p):
            for root, folders, names in os.walk(p):
                folders[:] = sorted(d for d in folders if expect or not d.endswith("_bad"))
                files += [os.path.join(root, n) for n in sorted(names)
                          if n.endswith(exts) and (expect or not os.path.splitext(n)[0].endswith("_bad"))]
        else:
            files.append(p)
    return files


def self_test(lint, mark, files, findings):
    """--expect-marked: the findings must be exactly the lines of `files` whose comment
    ends with `mark`. Prints what was missed or unexpected and a verdict; returns the
    exit status (0 only when both sets are equal and not empty)."""
    tail = re.compile(r"//\s*" + re.escape(mark) + r"\s*$")
    marked = set()
    for f in files:
        with open(f, encoding="utf-8", errors="replace") as fh:
            marked |= {(f, n) for n, text in enumerate(fh, 1) if tail.search(text)}
    found = {(f, line) for f, line, _ in findings}
    for f, line in sorted(marked - found):
        print(f"MISSED: {f}:{line} is marked {mark} but was not flagged")
    for f, line in sorted(found - marked):
        print(f"UNEXPECTED: {f}:{line} was flagged but is not marked {mark}")
    ok = bool(marked) and marked == found
    print(f"{lint} self-test: {len(marked)} marked, {len(found)} flagged: {'ok' if ok else 'FAIL'}")
    return 0 if ok else 1


def scan_stripped(files, find, safe):
    """(file, line, message) for every finding of `find(text, stripped)`, which yields
    (offset in the stripped text, message), but on lines `safe` matches (an opt-out
    comment), sorted and without repeats."""
    found = []
    for f in files:
        with open(f, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        lines = text.splitlines()
        s = strip(text)
        for off, msg in find(text, s):
            line = s.count("\n", 0, off) + 1
            if not safe.search(lines[line - 1]):
                found.append((f, line, msg))
    return sorted(set(found))


def lint_main(argv, doc, lint, mark, exts, scan):
    """The command line every lint takes: [--expect-marked] PATH...; `scan(files)` returns
    the findings. Prints them and a count (exit 1 if any), or with --expect-marked the
    self-test's verdict; exit 2 and the usage line from `doc` without a path."""
    expect = "--expect-marked" in argv
    paths = [a for a in argv if a != "--expect-marked"]
    if not paths:
        print(next(l for l in doc.splitlines() if l.startswith("usage:")), file=sys.stderr)
        return 2
    files = source_files(paths, expect, exts)
    findings = scan(files)
    for f, line, msg in findings:
        print(f"{f}:{line}: {msg}")
    if not expect:
        print(f"{lint}: {len(files)} files, {len(findings)} finding(s)")
        return 1 if findings else 0
    return self_test(lint, mark, files, findings)
