#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Checks the folder layering of src/mini5d (docs/architecture.md): no include cycle
between folders, and the few edges the architecture forbids outright. Exit 1 with one
line per problem (the cycle, or the edge, and a file that makes it), 0 when clean.

A folder is a top-level folder of src/mini5d, or parallel/<axis>; train/startup counts
as train. usage: check-layering.py [SRC_DIR]"""
import collections
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "mini5d")
# Edges that would break a promise of the architecture even without a cycle.
FORBIDDEN = {("train", "report"): "the trainer knows nothing of the report",
             ("train", "measure"): "the trainer does not measure the machine",
             ("parallel/pp", "model"): "the pipeline executor drives an abstract stage",
             ("plan", "comm"): "the planner is pure (no MPI)", ("plan", "kernels"): "the planner is pure (no Kokkos)",
             ("kernels", "comm"): "kernels never communicate", ("kernels", "model"): "kernels sit below the model",
             ("model", "plan"): "the model shares rules with the planner through rules/, not the planner itself",
             ("plan", "parallel/pp"): "the planner shares the schedules through rules/, not the executor's folder"}
# The rules both programs share sit below everything: they include nothing of mini5d.
BOTTOM = "rules"


def folder(path):
    rel = os.path.relpath(path, ROOT).split(os.sep)
    if rel[0] == "parallel" and len(rel) > 2:
        return "parallel/" + rel[1]
    return rel[0] if len(rel) > 1 else "."


def main():
    graph, why = collections.defaultdict(set), {}
    for d, _, files in os.walk(ROOT):
        for f in sorted(files):
            if not f.endswith((".hpp", ".cpp")):
                continue
            p = os.path.join(d, f)
            a = folder(p)
            for m in re.finditer(r'#include "mini5d/([^"]+)"', open(p, encoding="utf-8").read()):
                b = folder(os.path.join(ROOT, m.group(1)))
                if a != b:
                    graph[a].add(b)
                    why.setdefault((a, b), os.path.relpath(p, ROOT) + " includes " + m.group(1))
    problems = [f"{a} -> {b}: {reason} ({why[(a, b)]})" for (a, b), reason in FORBIDDEN.items() if (a, b) in why]
    problems += [f"{BOTTOM} -> {b}: the shared rules include nothing of mini5d ({why[(BOTTOM, b)]})"
                 for b in sorted(graph.get(BOTTOM, ()))]
    # Strongly connected components (Tarjan): any with two folders or more is a cycle.
    index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
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
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            comps.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    for comp in comps:
        if len(comp) > 1:
            edges = [why[(a, b)] for a in comp for b in comp if (a, b) in why]
            problems.append("include cycle between " + ", ".join(comp) + ": " + "; ".join(edges))
    for p in problems:
        print("check-layering: " + p)
    if not problems:
        print(f"check-layering: {len(graph)} folders, no include cycle, no forbidden edge")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
