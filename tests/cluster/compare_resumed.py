#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# A run resumed on a different layout against an uninterrupted one at the same global
# batch: the resumed report must begin right after the checkpoint it loaded (FIRST is
# that step + 1) and every loss must match the reference's within TOL relative (the
# layouts sum in different orders, so not bit for bit).
# usage: compare_resumed.py REFERENCE.json RESUMED.json FIRST TOL
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from reports import fail, load  # noqa: E402

ref, part, first, tol = load(sys.argv[1]), load(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
ref_loss = {s["step"]: s["loss"] for s in ref["steps"]}
steps = [s["step"] for s in part["steps"]]
if not steps or steps[0] != first or steps != list(range(first, first + len(steps))):
    fail(f"{sys.argv[2]}: steps {steps[:1]}..{steps[-1:]}, expected {first}.. in order")
if steps[-1] != max(ref_loss):
    fail(f"{sys.argv[2]}: ends at step {steps[-1]}, the reference at {max(ref_loss)}")
worst, at = 0.0, first
for s in part["steps"]:
    r = ref_loss[s["step"]]
    rel = abs(s["loss"] - r) / max(abs(r), 1e-30)
    if not rel <= tol:  # a NaN fails too
        fail(f"step {s['step']}: loss {s['loss']!r} vs {r!r} (relative {rel:.3g} > {tol})")
    if rel >= worst:
        worst, at = rel, s["step"]
print(f"losses of steps {first}-{steps[-1]} within {worst:.2g} relative of the uninterrupted run "
      f"(worst at step {at}; bound {tol})")
