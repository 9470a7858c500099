#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Holds the includes between the folders of src/mini5d and apps/ to the layering stated
once in scripts/layering.txt: each folder, the folders it may include and why, and the
edges no list may allow. Exit 1 with one line per problem, 0 when clean. A problem is an
include edge the list does not allow or forbids (the edge, and a file that makes it), an
include cycle between folders, an allowed edge no file makes any more (the list is stale),
a folder with sources the list does not name, or a listed folder with none.

A folder is a top-level folder of src/mini5d, or parallel/<axis>, or plan/<part> (the
planner's folders, one library each); a deeper one counts as its parent (train/startup
is train), and the files right in parallel/ are the folder "parallel". The files of the
apps folder are the folder "apps". A 'never A -> B' covers the folders under A and B
too (never plan -> comm: no folder of the planner includes comm).

usage: check-layering.py [--list FILE] [--apps DIR] [SRC_DIR]   check the code
       check-layering.py [--list FILE] --table                 print the doc's table
       check-layering.py [--list FILE] --check-docs DOC        DOC's table is the list's
       check-layering.py [--list FILE] [--apps DIR] [SRC_DIR] --suggest
                          print a list with the edges the code has (a starting point
                          after moving files; the reasons of the folders kept)
SRC_DIR is src/mini5d of this checkout unless given, and then --apps is its apps/."""
import argparse
import difflib
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
BEGIN = ("<!-- The layering table, generated from scripts/layering.txt by "
         "scripts/check-layering.py --table: edit the list, not the table. -->")
END = "<!-- End of the generated layering table. -->"
INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]mini5d/([^">]+)[">]', re.M)


class Layering:
    """The list: folder -> the folders it may include (in the list's order), folder -> why,
    (folder, folder) -> why never; and the comment lines above its first record."""

    def __init__(self):
        self.allowed, self.why, self.never, self.preamble = {}, {}, {}, []


def read_list(path):
    """The list and the problems of its own text (a bad line, a folder twice, no reason)."""
    lay, problems, current, seen_record = Layering(), [], None, False
    name = os.path.basename(path)
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    for n, text in enumerate(lines, 1):
        where = f"{name}:{n}"
        if not text.strip() or text.lstrip().startswith("#"):
            if not seen_record:
                lay.preamble.append(text)
            continue
        seen_record = True
        if text[0].isspace():
            if current is None or current in lay.why:
                problems.append(f"{where}: a reason line with no folder line right above it")
            else:
                lay.why[current] = text.strip()
            continue
        current = None
        never = re.fullmatch(r"never (\S+) -> (\S+): (.+)", text.rstrip())
        record = re.fullmatch(r"([^\s:]+):((?:[ \t]+\S+)*)", text.rstrip())
        if never:
            lay.never[(never[1], never[2])] = never[3]
        elif record and record[1] in lay.allowed:
            problems.append(f"{where}: {record[1]} is in the list twice")
        elif record:
            current = record[1]
            lay.allowed[current] = record[2].split()
        else:
            problems.append(f"{where}: neither 'FOLDER: FOLDERS...' nor 'never A -> B: why': {text.strip()}")
    problems += [f"{name}: {a} has no reason line under it" for a in lay.allowed if a not in lay.why]
    return lay, problems


# The folders whose sub-folders are folders of the list: parallel/<axis>, plan/<part>.
NESTED = ("parallel", "plan")


def folder_of(rel):
    parts = rel.split("/")
    if parts[0] in NESTED and len(parts) > 2:
        return parts[0] + "/" + parts[1]
    return parts[0] if len(parts) > 1 else "."


def under(folder, top):
    """Whether `folder` is `top` or a folder under it (plan/cost is under plan)."""
    return folder == top or folder.startswith(top + "/")


def never_why(lay, a, b):
    """The reason of the 'never' that forbids a -> b (its folders or ones above them), or None."""
    for (x, y), why in lay.never.items():
        if under(a, x) and under(b, y):
            return why
    return None


def scan(src, apps):
    """The include edges between folders, each with the first 'file includes header' that
    makes it, and each folder with sources, with its first file."""
    edges, folders = {}, {}
    for root, fixed in [(src, None)] + ([(apps, "apps")] if apps else []):
        for d, dirs, files in os.walk(root):
            dirs.sort()
            for f in sorted(files):
                if not f.endswith((".hpp", ".cpp")):
                    continue
                path = os.path.join(d, f)
                rel = os.path.relpath(path, root).replace(os.sep, "/")
                a, label = (fixed, fixed + "/" + rel) if fixed else (folder_of(rel), rel)
                folders.setdefault(a, label)
                with open(path, encoding="utf-8") as text:
                    for m in INCLUDE.finditer(text.read()):
                        b = folder_of(m[1])
                        if a != b:
                            edges.setdefault((a, b), f"{label} includes {m[1]}")
    return edges, folders


def cycles(edges):
    """The strongly connected components of two folders or more (Tarjan), each sorted."""
    graph = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index, low, stack, on, comps = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while not comp or comp[-1] != v:
                comp.append(stack.pop())
                on.discard(comp[-1])
            comps.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [c for c in comps if len(c) > 1]


def check(lay, edges, folders):
    """One line per way the code and the list disagree, and per include cycle."""
    problems = [f"folder {a} is not in the list: add it, with the folders it may include ({f})"
                for a, f in sorted(folders.items()) if a not in lay.allowed]
    problems += [f"folder {a} is in the list but has no sources: drop it" for a in lay.allowed if a not in folders]
    for (a, b), why in sorted(edges.items()):
        if never_why(lay, a, b):
            problems.append(f"{a} -> {b}: never: {never_why(lay, a, b)} ({why})")
        elif a in lay.allowed and b not in lay.allowed[a]:
            problems.append(f"{a} -> {b}: not in the list ({why})")
    for a, uses in lay.allowed.items():
        for b in uses:
            if never_why(lay, a, b):
                problems.append(f"{a} -> {b}: the list allows an edge it forbids ({never_why(lay, a, b)})")
            elif b not in lay.allowed:
                problems.append(f"{a} -> {b}: allowed, but {b} is not a folder of the list")
            elif a in folders and (a, b) not in edges:
                problems.append(f"{a} -> {b}: allowed, but no file makes it any more: drop it from the list")
    for comp in cycles(edges):
        made = [edges[(a, b)] for a in comp for b in comp if (a, b) in edges]
        problems.append("include cycle between " + ", ".join(comp) + ": " + "; ".join(made))
    return problems


def shown(folder, lay):
    """A folder as the doc names it; one with listed sub-folders is its own files only."""
    own = any(f.startswith(folder + "/") for f in lay.allowed)
    return f"`{folder}/` (its own files)" if own and folder in lay.allowed else f"`{folder}/`"


def shown_never(folder, lay):
    """A folder of a 'never' line, which covers its sub-folders: `plan/` (all of it)."""
    if any(f.startswith(folder + "/") for f in lay.allowed):
        return f"`{folder}/` (all of it)"
    return shown(folder, lay)


def table(lay):
    """The markdown of the doc's layering table, markers included, as a list of lines."""
    lines = [BEGIN, "", "| code | may include | why |", "|---|---|---|"]
    for a, uses in lay.allowed.items():
        lines.append(f"| {shown(a, lay)} | {', '.join(shown(b, lay) for b in uses) or 'nothing of mini5d'} | {lay.why.get(a, '')} |")
    if lay.never:
        lines += ["", "And never, whatever the list says:", ""]
        lines += [f"* {shown_never(a, lay)} → {shown_never(b, lay)}: {why}" for (a, b), why in lay.never.items()]
    return lines + ["", END]


def check_docs(lay, doc, list_path):
    """One line per difference between DOC's generated table and the list's."""
    with open(doc, encoding="utf-8") as f:
        text = f.read().splitlines()
    if BEGIN not in text or END not in text[text.index(BEGIN):]:
        return [f"{doc}: no generated layering table (the two marker lines of --table)"]
    start = text.index(BEGIN)
    stop = text.index(END, start)
    diff = difflib.unified_diff(text[start:stop + 1], table(lay), f"{doc}", "check-layering.py --table",
                                lineterm="", n=0)
    return [f"{doc}: the layering table is not {list_path}'s (print it with --table): {line}"
            for line in diff if line[:1] in "+-" and line[:3] not in ("+++", "---")]


def suggest(lay, edges, folders):
    """The list rewritten with the edges the code has: the known folders in the list's
    order, new ones after, each keeping its reason; forbidden edges left out, on stderr."""
    out = list(lay.preamble)
    for a in [f for f in lay.allowed if f in folders] + sorted(f for f in folders if f not in lay.allowed):
        uses = []
        for (x, b), why in sorted(edges.items()):
            if x != a:
                continue
            if never_why(lay, a, b):
                print(f"check-layering: left out {a} -> {b}, which the list forbids ({why})", file=sys.stderr)
            else:
                uses.append(b)
        out += [(a + ": " + " ".join(uses)).rstrip(), "    " + lay.why.get(a, "TODO: why this folder, in one line")]
    out += [""] + [f"never {a} -> {b}: {why}" for (a, b), why in lay.never.items()]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src", nargs="?", help="src/mini5d (default: this checkout's)")
    ap.add_argument("--apps", help="the drivers' folder (default: this checkout's apps/ when SRC_DIR is not given)")
    ap.add_argument("--list", default=os.path.join(HERE, "layering.txt"), help="the allow-list")
    ap.add_argument("--table", action="store_true", help="print the doc's table, markers included")
    ap.add_argument("--check-docs", metavar="DOC", help="fail when DOC's table is not the list's")
    ap.add_argument("--suggest", action="store_true", help="print a list with the edges the code has")
    args = ap.parse_args()
    lay, problems = read_list(args.list)
    if args.table:
        print("\n".join(table(lay)))
        return 0
    if args.check_docs:
        problems += check_docs(lay, args.check_docs, os.path.relpath(args.list))
        done = f"{args.check_docs}'s layering table is the list's"
    else:
        src = args.src or os.path.join(REPO, "src", "mini5d")
        apps = args.apps or (None if args.src else os.path.join(REPO, "apps"))
        edges, folders = scan(src, apps)
        if args.suggest:
            print("\n".join(suggest(lay, edges, folders)))
            return 0
        problems += check(lay, edges, folders)
        done = f"{len(folders)} folders, {len(edges)} edges, each allowed and used, no include cycle"
    for p in problems:
        print("check-layering: " + p)
    if not problems:
        print("check-layering: " + done)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
