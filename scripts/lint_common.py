# SPDX-License-Identifier: BSD-3-Clause
"""What the project's C++ lints (lint-device.py, lint-nan-compare.py) share around their
rules: which files a run reads, and the self-test against known-bad snippets."""
import os
import re


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
