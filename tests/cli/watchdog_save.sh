#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The watchdog during a checkpoint save, at -n 4 with parallel.collective_timeout_s=3.
#  1. A save that is slow but healthy (MINI5D_CKPT_FAIL=slow_write: every rank sleeps
#     0.2 s before each of the tiny deck's 87 datasets, so the save lasts about 18 s,
#     six times the timeout) completes,
#     and the checkpoint verifies: the timeout counts from the save's last progress,
#     not from its start.
#  2. A save where the last rank stops half-way (stall_write: it sleeps 120 s) is still
#     ended by the watchdog, a few seconds after the timeout, with its fatal line.
# usage: watchdog_save.sh WORKDIR MPIEXEC NP_FLAG MINI5D_APP DECK
set -u
work=$1 mpiexec=$2 npflag=$3 app=$4 deck=$5
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
run() {  # FAILPOINT DIR
  MINI5D_CKPT_FAIL=$1 timeout -s KILL 60 "$mpiexec" "$npflag" 4 "$app" train "$deck" parallel.d=4 train.micro_batch=4 \
    train.steps=2 checkpoint.every=2 checkpoint.dir=$2 parallel.collective_timeout_s=3 output.report= > run.out 2> run.err
}
start=$(date +%s)
run slow_write slow
status=$? elapsed=$(( $(date +%s) - start ))
[[ $status -eq 0 ]] || { echo "FAIL: slow save: exit status $status after $elapsed s, expected 0"; cat run.err; exit 1; }
"$app" ckpt verify slow > verify.out 2>&1 || { cat verify.out; echo "FAIL: the slow save does not verify"; exit 1; }
datasets=$(grep -Eo "[0-9]+ datasets verified" verify.out | cut -d' ' -f1)
(( elapsed >= 9 )) || { echo "FAIL: the slow save took $elapsed s, not well over the timeout"; exit 1; }
echo "ok: a healthy save of $datasets datasets lasting ${elapsed} s in all (timeout 3 s) completed and verifies"

start=$(date +%s)
run stall_write stall
status=$? elapsed=$(( $(date +%s) - start ))
[[ $status -ne 0 && $status -ne 137 ]] || { echo "FAIL: stalled save: exit status $status (137: the job hung until the test's limit)"; cat run.err; exit 1; }
want="^mini5d: rank [0-3]: fatal: step 2: the checkpoint save has made no progress for [3-5] s \(parallel.collective_timeout_s=3\): another rank is hung or gone; ending the job$"
[[ $(grep -c "^mini5d: " run.err) -ge 1 && $(grep "^mini5d: " run.err | grep -Evc "$want") -eq 0 ]] ||
  { echo "FAIL: not the watchdog's line for a save"; cat run.err; exit 1; }
(( elapsed < 40 )) || { echo "FAIL: took $elapsed s"; exit 1; }
! ls stall/*.h5 > /dev/null 2>&1 || { echo "FAIL: a checkpoint was committed: $(ls stall)"; exit 1; }
echo "ok: a rank stalled mid-save ended the job in $elapsed s: $(grep -m1 '^mini5d: ' run.err)"
