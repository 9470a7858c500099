#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# A layout run's JSON report against the single-rank run's, as the layout-invariance
# oracle compares them (tests/mpi/invariance.hpp): every step's loss and pre-clip
# gradient norm within its relative tolerance (1e-5 each), and the bytes each axis
# moved equal to the planner's prediction on every rank.
# usage: compare_losses.py REFERENCE.json LAYOUT.json
# Prints one summary line; exits 1 with a "FAIL:" line otherwise.
import os
import math
import sys

TOLERANCE = 1e-5

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from reports import fail, load  # noqa: E402


def rel(a, b):
    if not (math.isfinite(a) and math.isfinite(b)):
        return math.inf
    return abs(a - b) / max(abs(b), 1e-30)


if len(sys.argv) != 3:
    print("usage: compare_losses.py REFERENCE.json LAYOUT.json", file=sys.stderr)
    sys.exit(2)
ref, run = load(sys.argv[1]), load(sys.argv[2])
a, b = ref["steps"], run["steps"]
if not a or [s["step"] for s in a] != [s["step"] for s in b]:
    fail(f"steps differ: {len(a)} in the reference, {len(b)} in the layout run")
worst = {"loss": 0.0, "grad_norm": 0.0}
for x, y in zip(a, b):
    for k in worst:
        worst[k] = max(worst[k], rel(y[k], x[k]))
for k, w in worst.items():
    if w > TOLERANCE:
        fail(f"{k}: worst relative difference {w:.3g} > {TOLERANCE:g}")
moved = []
for axis, v in run["bytes_per_step"].items():
    if v["worst_relative_difference"] != 0 or v["measured"] != v["predicted"]:
        fail(f"axis {axis}: {v['measured']} bytes measured, {v['predicted']} predicted "
             f"(worst rank {v['worst_relative_difference']:.3g})")
    if v["measured"]:
        moved.append(f"{axis} {v['measured']}")
print(f"{len(a)} steps: loss within {worst['loss']:.2g}, grad norm within {worst['grad_norm']:.2g} "
      f"of one rank; bytes per step equal the planner's ({', '.join(moved)})")
