#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# checkpoint.every=auto on two ranks (two virtual nodes): the first interval is printed
# after the second step with C estimated from the checkpoint's bytes, the saves come at
# that interval, the interval is printed again with the first save's measured C, and
# the saves after it come at the new interval, counted from that save. Both lines'
# figures give their interval by Young's rule, and the ranks agreed (no hang, exit 0).
# usage: train_auto_interval.sh WORKDIR MPIEXEC NP_FLAG MINI5D_APP DECK
set -u
work=$1 mpiexec=$2 npflag=$3 app=$4 deck=$5
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
fail() { echo "FAIL: $*"; tail -40 run.out; tail -20 run.err; exit 1; }
# A node MTBF of 1.8 s and a checkpoint of a few MB: an interval of some steps.
OPENBLAS_NUM_THREADS=1 "$mpiexec" "$npflag" 2 "$app" train "$deck" parallel.d=2 parallel.ranks_per_node=1 \
  checkpoint.every=auto checkpoint.node_mtbf_hours=0.0005 checkpoint.keep=0 checkpoint.dir=ck \
  train.steps=120 output.log_every=100 output.report=r.json > run.out 2> run.err || fail "exit status $?"
python3 - <<'PY' || fail "intervals"
import json, math, re
out = open("run.out").read().splitlines()
lines = [l for l in out if l.startswith("checkpoint.every auto:")]
assert len(lines) == 2, lines
pat = re.compile(r"checkpoint\.every auto: every (\d+) steps? \(Young: sqrt\(2 x C (\S+) s x M (\S+) h\) = (\S+) s "
                 r"at (\S+) s/step; M = 0\.0005 h / 2 nodes; C (.*)\)$")
m1, m2 = pat.match(lines[0]), pat.match(lines[1])
assert m1 and m2, lines
assert m1.group(6).startswith("estimated from ") and m1.group(6).endswith(" at 1 GB/s"), lines[0]
assert m2.group(6).startswith("measured at the save after step "), lines[1]
for m in (m1, m2):
    k, c, mh, tau, step = int(m.group(1)), float(m.group(2)), float(m.group(3)), float(m.group(4)), float(m.group(5))
    assert abs(mh - 0.0005 / 2) < 1e-9, m.group(0)
    assert abs(tau - math.sqrt(2 * c * mh * 3600)) <= 0.01 * tau, m.group(0)  # three digits printed
    # Young's steps from the printed (rounded) figures: the chosen count or a neighbour.
    assert abs(k - max(1, round(tau / step))) <= max(1, 0.01 * k), m.group(0)
r = json.load(open("r.json"))
saves = [c["step"] for c in r["checkpoints"] if c["kind"] == "save"]
k1, k2 = int(m1.group(1)), int(m2.group(1))
first = max(2, k1)  # derived after step 2: a shorter interval saves at step 2
assert saves[0] == first, (saves, k1)
assert int(re.search(r"after step (\d+)", lines[1]).group(1)) == first, lines[1]
want = list(range(first, 121, k2)) if first <= 120 else []
assert saves == want, (saves, want, k1, k2)
assert len(saves) >= 2, ("the test wants two saves at least; lower node_mtbf_hours", saves, k1, k2)
reasons = {c["reason"] for c in r["checkpoints"]}
assert reasons <= {"auto: every %d steps" % k1, "auto: every %d steps" % k2}, reasons
# The first line comes after step 2's and before the first save's line, the second right after it.
i1, = [i for i, l in enumerate(out) if l == lines[0]]
i2, = [i for i, l in enumerate(out) if l == lines[1]]
saved = [i for i, l in enumerate(out) if l.startswith("checkpoint saved: ")]
assert i1 < saved[0] and i2 == saved[0] + 1, (i1, i2, saved)
print("intervals", k1, k2, "saves", saves)
PY
grep -h "^checkpoint.every auto:" run.out
echo "ok: auto interval printed after step 2 and after the first save, saves at those intervals"
