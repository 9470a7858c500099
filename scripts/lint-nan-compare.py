#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Flags NaN-blind error accumulation in the tests' C++: a worst error built with a raw
maximum or comparison, which skips a NaN and so scores a NaN result as no error at all.

Every comparison with NaN is false, so std::max(worst, NaN) and std::fmax(worst, NaN)
both return `worst`, and so do `worst = e > worst ? e : worst` and
`if (e > worst) worst = e`: a loop written with any of them over an all-NaN gradient
ends at 0, and `CHECK(worst <= tol)` passes. The tests accumulate errors through
tests/support/compare.hpp instead (test::worse, worst_of, abs_error, relative_to,
floored_relative, ScaledError), where a value that is not finite, on either side, makes
the error +inf. Flagged, in comments and strings stripped:
  1. std::max, std::fmax, fmax or std::max({...}) with an error among its arguments:
     an |x| (abs, fabs), a square root, or a name that says error (err, worst, diff,
     dev, ratio, moved, mismatch);
  2. a running maximum or minimum written as a ternary, `x = a > x ? a : x` (either
     order, <, >, <=, >=);
  3. a running maximum or minimum written as an if, `if (a > x) x = a;` or
     `if (a > x) { x = a; ... }`;
  4. std::max_element or std::min_element over a container whose name says error.
A line may carry `// nan-safe: <reason>` where the value is known finite (compare.hpp's
own maximum after its finiteness check, a count of bytes): that line is not flagged.

usage: lint-nan-compare.py [--expect-marked] PATH...   (files or directories)
  exit 0: nothing found; 1: findings (file:line: message); 2: usage error.
  A directory's files and folders named *_bad are skipped, except with
  --expect-marked: the files are known-bad snippets; every line the lint must flag
  carries the comment `NAN-BLIND`, and the findings must be exactly those lines (so
  the lint's own test fails if it misses one or flags a good one).
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lint_common import lint_main, scan_stripped  # noqa: E402

EXTS = (".cpp", ".hpp", ".h", ".cc", ".cxx", ".hh", ".inl")
ERRORISH = re.compile(r"\b\w*(?:err|worst|diff|dev|ratio|moved|mismatch)\w*\b", re.I)
MAGNITUDE = re.compile(r"\b(?:std::)?(?:abs|fabs|fabsf|sqrt|hypot)\s*\(")
MAX_CALL = re.compile(r"\b(?:std::)?(?:max|fmax|fmaxf|fmaxl)\s*(?:<[^<>()]*>)?\s*\(")
EXTREMUM = re.compile(r"\b(?:std::)?(?:max|min)_element\s*\(")
OPERAND = r"[\w.:\[\]()>-]+?"
TERNARY = re.compile(r"([\w.\[\]]+)\s*=\s*(" + OPERAND + r")\s*([<>]=?)\s*(" + OPERAND + r")\s*\?\s*(" + OPERAND +
                     r")\s*:\s*(" + OPERAND + r")\s*;")
IF_ACC = re.compile(r"\bif\s*\(\s*(" + OPERAND + r")\s*([<>]=?)\s*(" + OPERAND + r")\s*\)\s*\{?\s*([\w.\[\]]+)\s*=\s*(" +
                    OPERAND + r")\s*[;,]")
SAFE = re.compile(r"//\s*nan-safe:\s*\S")


def call_args(s, open_paren):
    """The text between the parenthesis at open_paren and its match."""
    depth = 0
    for j in range(open_paren, len(s)):
        if s[j] in "([{":
            depth += 1
        elif s[j] in ")]}":
            depth -= 1
            if depth == 0:
                return s[open_paren + 1:j]
    return s[open_paren + 1:]


def is_error(text):
    return bool(MAGNITUDE.search(text) or ERRORISH.search(text))


def same(a, b):
    return re.sub(r"\s+", "", a) == re.sub(r"\s+", "", b)


def findings_in(s):
    """(offset, message) for each NaN-blind accumulation in stripped source s."""
    out = []
    for m in MAX_CALL.finditer(s):
        args = call_args(s, m.end() - 1)
        if is_error(args):
            out.append((m.start(), f"{m.group(0).rstrip('( ')} of an error skips a NaN: use test::worse or "
                                   "worst_of (tests/support/compare.hpp)"))
    for m in TERNARY.finditer(s):
        target, a, _, b, yes, no = m.groups()
        # A maximum or minimum of a and b, kept in one of them: a running extremum.
        if {re.sub(r"\s+", "", yes), re.sub(r"\s+", "", no)} == {re.sub(r"\s+", "", a), re.sub(r"\s+", "", b)} and \
                (same(target, a) or same(target, b)):
            out.append((m.start(), f"running extremum `{target} = ... ? ... : ...` skips a NaN: use test::worse "
                                   "(tests/support/compare.hpp)"))
    for m in IF_ACC.finditer(s):
        a, _, b, target, value = m.groups()
        if re.fullmatch(r"[-+]?[\d.]+(?:e[-+]?\d+)?[fFlL]?", value.strip()):
            continue  # a clamp to a constant (`if (x < 0) x = 0`), not a running extremum
        if (same(target, a) and same(value, b)) or (same(target, b) and same(value, a)):
            out.append((m.start(), f"running extremum `if (...) {target} = {value}` skips a NaN: use test::worse "
                                   "(tests/support/compare.hpp)"))
    for m in EXTREMUM.finditer(s):
        if ERRORISH.search(call_args(s, m.end() - 1)):
            out.append((m.start(), "max_element/min_element over errors orders NaN arbitrarily: use test::worse"))
    return out


def main(argv):
    return lint_main(argv, __doc__, "lint-nan-compare", "NAN-BLIND", EXTS,
                     lambda files: scan_stripped(files, lambda text, s: findings_in(s), SAFE))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
