#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The watchdog outside the step (issue: a stopped rank hung the job until the batch
# limit): one rank stops itself with SIGSTOP (MINI5D_FAULT_STOP, as `kill -STOP` would)
#   1. during start-up (np 2, after reading the deck),
#   2. during a resume's load (np 4, after reading the checkpoint's metadata),
#   3. after the last step (np 2, before the end of the run's gathers),
# with parallel.collective_timeout_s=5. Each job must end within 40 s, not at the
# test's limit, with one line from the lowest waiting rank that names the phase and
# the stopped rank.
# usage: watchdog_phases.sh WORKDIR MPIEXEC NP_FLAG MINI5D_APP DECK
set -u
work=$1 mpiexec=$2 npflag=$3 app=$4 deck=$5
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
common=(output.report= checkpoint.dir=ck parallel.collective_timeout_s=5)
case_() {  # NAME NP STOPPED SPEAKER PHASE-REGEX ARGS...
  local name=$1 np=$2 stopped=$3 speaker=$4 phase=$5
  shift 5
  local start status elapsed
  start=$(date +%s)
  MINI5D_FAULT_STOP="rank=$stopped,at=$name" timeout -s KILL 40 "$mpiexec" "$npflag" "$np" "$app" train "$deck" \
    "${common[@]}" "$@" > "$name.out" 2> "$name.err"
  status=$? elapsed=$(( $(date +%s) - start ))
  [[ $status -ne 0 && $status -ne 137 ]] ||
    { echo "FAIL $name: exit status $status after $elapsed s (137: hung until the test's limit)"; cat "$name.err"; exit 1; }
  local want="^mini5d: rank $speaker: fatal: step [0-9]+: the $phase has made no progress for [5-9] s \(parallel.collective_timeout_s=5\): another rank is hung or gone \(not waiting with the others: rank $stopped\); ending the job$"
  [[ $(grep -c "^mini5d: " "$name.err") -eq 1 ]] && grep -Eq "$want" "$name.err" ||
    { echo "FAIL $name: not the one line expected ($want):"; cat "$name.err"; exit 1; }
  echo "ok $name: ended in $elapsed s: $(grep '^mini5d: ' "$name.err")"
}
case_ start-up 2 1 0 "world start-up" parallel.d=2 train.micro_batch=8 train.steps=3
case_ end 2 1 0 "world end of the run" parallel.d=2 train.micro_batch=8 train.steps=3
# A checkpoint to resume from, then the load with rank 2 stopped.
rm -rf ck
timeout -s KILL 60 "$mpiexec" "$npflag" 4 "$app" train "$deck" output.report= checkpoint.dir=ck parallel.d=4 \
  train.micro_batch=4 train.steps=2 checkpoint.every=2 > save.out 2>&1 || { cat save.out; echo "FAIL: the save to resume from"; exit 1; }
case_ load 4 2 0 "checkpoint load" parallel.d=4 train.micro_batch=4 train.steps=4 checkpoint.resume=latest
