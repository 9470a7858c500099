#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A checkpoint whose state holds an infinity, with a checksum that matches it (rewritten
# with h5py, so the checksum check passes): resume refuses it at load, naming the
# dataset and the count, instead of training on and later advising a lower lr; `ckpt
# verify` refuses it too.
# Skips (77) without h5py.
# usage: ckpt_nonfinite.sh WORKDIR MINI5D_APP DECK
set -u
work=$1 app=$2 deck=$3
source "$(dirname "$0")/lib.sh"
need_h5py
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
fail() { echo "FAIL: $*"; [[ -f run.err ]] && cat run.err; exit 1; }
"$app" train "$deck" train.steps=4 checkpoint.every=4 checkpoint.dir=ck > run.out 2> run.err || fail "the first run"
file=$(ls ck/*.h5 | head -n 1)
name=$("$py" - "$file" <<'PY'
import sys
import h5py
import numpy as np

def mix64(z):
    z = z + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))

with np.errstate(over="ignore"), h5py.File(sys.argv[1], "r+") as f:
    names = []
    f.visititems(lambda n, o: names.append("/" + n) if isinstance(o, h5py.Dataset) else None)
    name = sorted(names)[0]
    x = f[name][...]
    flat = x.reshape(-1)
    flat[0] = np.inf
    f[name][...] = flat.reshape(x.shape)
    idx = np.arange(flat.size, dtype=np.uint64)
    f[name].attrs["checksum"] = np.uint64(np.sum(mix64(mix64(idx) ^ flat.view(np.uint32).astype(np.uint64)),
                                                 dtype=np.uint64))
    print(name)
PY
) || fail "h5py could not rewrite $file"
# verify and resume agree: both refuse it.
"$app" ckpt verify ck > verify.out 2>&1 && fail "ckpt verify passed a checkpoint holding an infinity"
grep -q "dataset $name holds 1 NaN or infinite values" verify.out || { cat verify.out; fail "verify did not name $name"; }
"$app" train "$deck" train.steps=8 checkpoint.dir=ck resume=latest > run.out 2> run.err
status=$?
[[ $status -eq 2 ]] || fail "resume exit $status, expected 2"
[[ $(grep -c "dataset $name holds 1 NaN or infinite value(s): this checkpoint cannot be resumed" run.err) -eq 1 ]] ||
  fail "no single line naming $name"
echo "ok: an infinity in $name (checksum matching) is refused at resume, named"
