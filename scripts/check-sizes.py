#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Checks that the code stays readable in one sitting (docs/architecture.md,
conventions): no source file over 400 lines, and no C++ function body over 100 lines
unless a comment in the three lines above it starts with "Long because" and says why.
Exit 1 with one line per problem (file:line, what, how long), 0 when clean.

C++ is read as text: comments and string literals are blanked, then braces are
matched; a brace opens a function body when it follows a closing parenthesis (with
const, noexcept, override or a trailing return type between) at namespace or class
level, and is not an if, for, while or switch. usage: check-sizes.py DIR... (folders named *_bad below a DIR are skipped)"""
import os
import re
import sys

MAX_FILE, MAX_FUNCTION = 400, 100
SOURCES = (".cpp", ".hpp", ".cu", ".py", ".sh")
HEAD = re.compile(r"\)\s*(const)?\s*(noexcept)?\s*(override)?\s*(->\s*[\w:<>, ]+)?\s*$")
CONTROL = re.compile(r"\b(if|for|while|switch|catch)\s*\(")
SCOPE = re.compile(r"\b(namespace|class|struct|union|enum)\b[^;()]*$")


def blank(text):
    """Comments and literals replaced by blanks, line breaks kept."""
    keep_lines = lambda m: "\n" * m.group(0).count("\n")
    text = re.sub(r"/\*.*?\*/", keep_lines, text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"R\"\((.*?)\)\"", keep_lines, text, flags=re.S)
    text = re.sub(r"\"(\\.|[^\"\\\n])*\"", '""', text)
    return re.sub(r"'(\\.|[^'\\\n])'", "' '", text)


def long_functions(text, raw_lines):
    lines = blank(text).split("\n")
    stack, found = [], []  # stack: (kind, line)
    for i, line in enumerate(lines):
        for j, ch in enumerate(line):
            if ch == "{":
                head = (" ".join(lines[max(0, i - 3):i]) + " " + line[:j]).strip()
                last = re.split(r"[;{}]", head)[-1]
                at_scope = all(kind == "scope" for kind, _ in stack)
                if at_scope and HEAD.search(last) and not CONTROL.search(line[:j]):
                    stack.append(("function", i))
                elif SCOPE.search(last):
                    stack.append(("scope", i))
                else:
                    stack.append(("block", i))
            elif ch == "}" and stack:
                kind, start = stack.pop()
                if kind == "function" and i - start > MAX_FUNCTION:
                    above = " ".join(raw_lines[max(0, start - 3):start + 1])
                    if "Long because" not in above:
                        found.append((start + 1, i - start))
    return found


def main(roots):
    problems = []
    for root in roots:
        for folder, subfolders, files in os.walk(root):
            # Known-bad fixtures (tests/lint/*_bad) are checked only when named.
            subfolders[:] = sorted(d for d in subfolders if not d.endswith("_bad"))
            for name in sorted(files):
                if not name.endswith(SOURCES):
                    continue
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
                raw = text.split("\n")
                n = len(raw) - (1 if text.endswith("\n") else 0)
                if n > MAX_FILE:
                    problems.append(f"{path}:1: file of {n} lines (at most {MAX_FILE}: split it by concern)")
                if name.endswith((".cpp", ".hpp", ".cu")):
                    for line, length in long_functions(text, raw):
                        problems.append(f"{path}:{line}: function of {length} lines (at most {MAX_FUNCTION}, "
                                        "or say why in a comment starting \"Long because\" just above it)")
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["."]))
