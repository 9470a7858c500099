#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A checkpoint holds the logical (unsharded) tensors whatever the tensor-parallel degree
# that wrote it: one step of the tiny deck at learning rate 0, saved at 1 rank and at
# t=2 (SP on) and read back with h5py alone, has the same datasets with the same shapes;
# the weights are bit-identical (the initial values, drawn at their logical indices) and
# the moments equal within fp32 rounding of the sharded sums. Exit 77 (skipped) without
# h5py.
# usage: tp_checkpoint_h5py.sh WORKDIR MPIEXEC NP_FLAG APP DECK
set -u
work=$1 mpiexec=$2 npflag=$3 app=$4 deck=$5
source "$(dirname "$0")/lib.sh"
need_h5py
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
common=(train.steps=1 train.lr=0 train.min_lr=0 checkpoint.at_end=true output.log_every=1000)
"$mpiexec" "$npflag" 1 "$app" train "$deck" "${common[@]}" checkpoint.dir=t1 output.report=t1.json >/dev/null || exit 1
"$mpiexec" "$npflag" 2 "$app" train "$deck" "${common[@]}" checkpoint.dir=t2 parallel.t=2 output.report=t2.json \
  >/dev/null || exit 1
exec "$py" - t1/step-00000001.h5 t2/step-00000001.h5 <<'PY'
import sys
import h5py
import numpy as np

a, b = (h5py.File(p, "r") for p in sys.argv[1:3])
names = []
a.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
other = []
b.visititems(lambda n, o: other.append(n) if isinstance(o, h5py.Dataset) else None)
if sorted(names) != sorted(other):
    sys.exit(f"FAIL: datasets differ: {sorted(set(names) ^ set(other))}")
worst = 0.0
for n in names:
    x, y = a[n][()], b[n][()]
    if x.shape != y.shape:
        sys.exit(f"FAIL: {n}: shape {x.shape} at t=1, {y.shape} at t=2")
    if n.startswith("model/"):
        if not np.array_equal(x, y):
            sys.exit(f"FAIL: {n}: weights differ (max {float(np.abs(x - y).max()):.3g})")
    else:
        scale = max(float(np.abs(x).max()), 1e-30)
        worst = max(worst, float(np.abs(x - y).max()) / scale)
print(f"{len(names)} datasets, same shapes; weights bit-identical; moments: worst difference relative "
      f"to each tensor's largest value {worst:.3g}")
if worst > 1e-4:
    sys.exit("FAIL: moments differ beyond fp32 rounding")
PY
