#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A NaN that one rank alone sees (MINI5D_FAULT_NAN, src/mini5d/train/fault_nan.hpp: one
# NaN in that rank's reduced gradients at one step) is skipped by every rank together:
# the step is logged as skipped, no rank updates, and the run goes on with finite
# losses to exit 0. At -n 2 with d=2 and ZeRO 0 the NaN lies in a part whose norm the
# other rank counts, so only the agreed non-finite flag can catch it; with ZeRO 3 it
# lies in the rank's own shard and the summed gradient norm turns NaN too.
# usage: train_nan_one_rank.sh WORKDIR MPIEXEC NP_FLAG MINI5D_APP DECK
set -u
work=$1 mpiexec=$2 npflag=$3 app=$4 deck=$5
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
fail() { echo "FAIL: $*"; for f in "${files[@]}"; do echo "--- $f"; tail -20 "$f"; done; exit 1; }
check() {  # check NAME EXPECTED_REASON ZERO
  local name=$1 reason=$2 zero=$3
  files=("$name.out" "$name.err")
  MINI5D_FAULT_NAN=rank=1,step=3 "$mpiexec" "$npflag" 2 "$app" train "$deck" parallel.d=2 parallel.zero="$zero" \
    train.steps=6 output.log_every=1 checkpoint.dir="$name-ck" output.report= > "$name.out" 2> "$name.err"
  local status=$?
  [[ $status -eq 0 ]] || fail "$name: exit status $status, expected 0"
  [[ $(grep -c "skipped" "$name.out") -eq 1 ]] || fail "$name: expected exactly one skipped step"
  grep -q "^step 3/6  skipped: non-finite $reason; parameters and moments unchanged" "$name.out" ||
    fail "$name: step 3 not skipped for '$reason'"
  # Every other step trained on finite parameters (a rank that updated with the NaN
  # would make every later loss NaN, and the run would stop after train.max_skipped).
  for s in 1 2 4 5 6; do
    grep -Eq "^step $s/6  loss [0-9]+\.[0-9]+" "$name.out" || fail "$name: step $s has no finite loss"
  done
}
check zero0 "loss or gradient norm on another rank" 0
check zero3 "gradient norm NaN" 3
echo "ok: a NaN on one rank skips step 3 on both (ZeRO 0: the agreed flag; ZeRO 3: the norm), steps 4-6 finite"
