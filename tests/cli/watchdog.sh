#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The collective watchdog. Rank 1 sleeps 120 s before step 3's first
# collective (MINI5D_FAULT_SLEEP), as a hung node would; with
# parallel.collective_timeout_s=3 rank 0 must end the job well within 60 s, with one
# line naming its rank, the step, the axis and the operation.
# usage: watchdog.sh WORKDIR MPIEXEC NP_FLAG MINI5D_APP DECK
set -u
work=$1 mpiexec=$2 npflag=$3 app=$4 deck=$5
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
start=$(date +%s)
MINI5D_FAULT_SLEEP=rank=1,step=3,seconds=120 timeout -s KILL 60 "$mpiexec" "$npflag" 2 "$app" train "$deck" \
  parallel.d=2 train.micro_batch=8 train.steps=5 parallel.collective_timeout_s=3 output.report= checkpoint.dir=ck \
  > run.out 2> run.err
status=$? elapsed=$(( $(date +%s) - start ))
[[ $status -ne 0 && $status -ne 137 ]] || { echo "FAIL: exit status $status (137: the job hung until the test's limit)"; cat run.err; exit 1; }
(( elapsed < 60 )) || { echo "FAIL: took $elapsed s"; exit 1; }
want="^mini5d: rank 0: fatal: step 3: the dp (allreduce|reduce-scatter|allgather) has not completed after [0-9]+ s \(parallel.collective_timeout_s=3\): another rank is hung or gone \(not waiting with the others: rank 1\); ending the job$"
[[ $(grep -c "^mini5d: " run.err) -eq 1 ]] && grep -Eq "$want" run.err ||
  { echo "FAIL: not the one watchdog line expected"; cat run.err; exit 1; }
echo "ok: ended in $elapsed s: $(grep '^mini5d: ' run.err)"
