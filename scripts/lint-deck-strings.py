#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Flags a deck value compared as text outside the deck's parser (src/mini5d/core/deck*).

The deck parses every choice field into its enum and every true/false field into a bool
(rules/deck_choices.hpp), once; the runtime and the planner compare those. A comparison
such as `deck.model.mlp == "swiglu"` or `wire != "bf16"` is a second parser: it
drifts from the schema (a new value is silently "not swiglu") and from the planner's
reading of the same field. Flagged, in code (comments stripped):
  1. `==` or `!=` between a string literal and a member named like a choice or
     true/false field of the deck (`x.mlp`, `p->schedule`; the names are read from
     core/deck_schema.cpp's choice_field and flag_field lines);
  2. `==` or `!=` between anything and a literal that spells one of the deck's choices
     (the spellings of rules/deck_choices.cpp), except the ones every command line uses
     for other things too: true, false, auto.
A line may carry `// deck-string: <reason>` where the text is not a deck value (a
command-line word that happens to be spelt alike): that line is not flagged.

usage: lint-deck-strings.py [--expect-marked] PATH...   (files or directories)
  exit 0: nothing found; 1: findings (file:line: message); 2: usage error.
  Files under src/mini5d/core/ named deck* and rules/deck_choices.* (the parser) are skipped. A directory's
  files and folders named *_bad are skipped, except with --expect-marked: the files are
  known-bad snippets; every line the lint must flag carries the comment `DECK-STRING`,
  and the findings must be exactly those lines.
"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from lint_common import lint_main, scan_stripped  # noqa: E402

EXTS = (".cpp", ".hpp", ".h", ".cc", ".cxx", ".hh", ".inl")
CORE = os.path.join(HERE, "..", "src", "mini5d", "core")
RULES = os.path.join(HERE, "..", "src", "mini5d", "rules")
GENERIC = {"true", "false", "auto"}
PARSER = re.compile(r"(^|[/\\])src[/\\]mini5d[/\\](core[/\\]deck|rules[/\\]deck_choices)[^/\\]*$")
SAFE = re.compile(r"//\s*deck-string:\s*\S")
COMPARE = re.compile(r"[!=]=")
LITERAL = re.compile(r'"(?:[^"\\\n]|\\.)*"')
OPERAND_BEFORE = re.compile(r"([\w.\[\]()>-]*?)\s*$")
OPERAND_AFTER = re.compile(r"^\s*((?:\w+|\.|->|\(\)|\[\w*\])*)")


def deck_vocabulary():
    """(the deck's choice and true/false field names, the spellings of its choices)."""
    with open(os.path.join(CORE, "deck_schema.cpp"), encoding="utf-8") as fh:
        fields = set(re.findall(r'\b(?:choice|flag)_field\(\s*"\w+",\s*"(\w+)"', fh.read()))
    with open(os.path.join(RULES, "deck_choices.cpp"), encoding="utf-8") as fh:
        words = set(re.findall(r'"([\w.-]+)"', strip_comments(fh.read())))
    return fields, words - GENERIC - {"?"}


def strip_comments(text):
    return re.sub(r"//[^\n]*", "", text)


def member(expr, fields):
    """The deck field an operand reads (`deck.model.mlp` -> mlp), or None."""
    m = re.search(r"(?:\.|->)(\w+)\s*$", expr)
    return m.group(1) if m and m.group(1) in fields else None


def findings_in(text, s, fields, words):
    """(offset, message) for each deck value compared as text; s is text stripped."""
    out = []
    for op in COMPARE.finditer(s):
        before, after = s[:op.start()], s[op.end():]
        lit_after = re.match(r"\s*\"", after)
        lit_before = re.search(r"\"\s*$", before)
        if not (lit_after or lit_before):
            continue
        if lit_after:
            start = op.end() + lit_after.end() - 1
            literal = LITERAL.match(text, start)
            other = OPERAND_BEFORE.search(before).group(1)
        else:
            start = text.rfind('"', 0, len(before.rstrip()) - 1)  # the literal's opening quote
            literal = LITERAL.match(text, start)
            other = OPERAND_AFTER.match(after).group(1)
        value = literal.group(0)[1:-1] if literal else ""
        field = member(other, fields)
        if field:
            out.append((op.start(), f'deck field {field} compared with "{value}" as text: compare its enum or bool '
                                    "(rules/deck_choices.hpp)"))
        elif value in words:
            out.append((op.start(), f'"{value}" is a deck choice compared as text: parse it once with parse_choice '
                                    "and compare the enum (rules/deck_choices.hpp)"))
    return out


def scan(files):
    fields, words = deck_vocabulary()
    ours = [f for f in files if not PARSER.search(os.path.abspath(f))]
    return scan_stripped(ours, lambda text, s: findings_in(text, s, fields, words), SAFE)


def main(argv):
    return lint_main(argv, __doc__, "lint-deck-strings", "DECK-STRING", EXTS, scan)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
