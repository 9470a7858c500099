#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# The losses of a run split over several job starts against an uninterrupted run.
# usage: compare_runs.py [--gaps] REFERENCE.json PART.json [PART.json ...]
# The parts (JSON reports, in start order) must cover steps 1..N of the reference
# exactly once, each part beginning right after the step its predecessor saved, and
# every loss must equal the reference's (as printed, %.9g: bit-for-bit for a float).
# With --gaps a part may begin later (a start killed before it wrote its report),
# but still right after the checkpoint it loaded.
# Prints one summary line; exits 1 with a "FAIL:" line otherwise.
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from reports import fail, load  # noqa: E402


args = sys.argv[1:]
gaps = bool(args) and args[0] == "--gaps"
args = args[1:] if gaps else args
ref = load(args[0])
parts = [(p, load(p)) for p in args[1:]]
ref_loss = {s["step"]: s["loss"] for s in ref["steps"]}
n = len(ref["steps"])
if sorted(ref_loss) != list(range(1, n + 1)):
    fail(f"{args[0]}: steps are not 1..{n}")
if ref["stopped_by_signal"] != 0:
    fail(f"{args[0]}: the reference run was stopped by signal {ref['stopped_by_signal']}")

next_step, pieces = 1, []
for i, (path, r) in enumerate(parts):
    steps = [s["step"] for s in r["steps"]]
    if not steps:
        fail(f"{path}: no steps")
    if gaps and steps[0] > next_step:
        next_step = steps[0]
    if steps != list(range(next_step, next_step + len(steps))):
        fail(f"{path}: steps {steps[0]}..{steps[-1]}, expected to start at {next_step}")
    if i > 0:  # a later start must say it loaded the checkpoint of step next_step - 1
        loads = [c for c in r["checkpoints"] if c["kind"] == "load"]
        if not loads or loads[0]["step"] != next_step - 1:
            fail(f"{path}: did not resume from the checkpoint of step {next_step - 1}: {r['checkpoints']}")
    for s in r["steps"]:
        if s["loss"] != ref_loss[s["step"]]:
            fail(f"{path}: step {s['step']} loss {s['loss']!r} != uninterrupted {ref_loss[s['step']]!r}")
    pieces.append(f"{steps[0]}-{steps[-1]}")
    next_step = steps[-1] + 1
if next_step != n + 1:
    fail(f"the parts end at step {next_step - 1}, the reference at {n}")
last = parts[-1][1]["steps"][-1]
print(f"losses equal to the uninterrupted run at all {n} steps (starts: {', '.join(pieces)}; "
      f"step {n}: {last['loss']!r} vs {ref_loss[n]!r})")
