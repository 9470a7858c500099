#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A save that dies part-way leaves the previous checkpoint and `latest` intact:
#  1. injected failures (MINI5D_CKPT_FAIL=mid_write, =after_write) in a training run's
#     save at step 10, after a good save at step 5;
#  2. kill -9 of one rank of a run saving every step, in the middle of a save.
# Each time `latest` must verify and a resume from it must run.
# usage: train_save_faults.sh WORKDIR MPIEXEC NP_FLAG MINI5D_APP DECK
set -u
work=$1 mpiexec=$2 npflag=$3 app=$4 deck=$5
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
run() { "$mpiexec" "$npflag" 2 "$app" train "$deck" parallel.d=2 train.micro_batch=8 parallel.zero=3 \
        checkpoint.dir=ck output.report= output.log_every=1 "$@"; }
check_latest() {  # expected latest file name
  [[ $(head -1 ck/latest) == "$1" ]] || { echo "FAIL: latest is $(head -1 ck/latest), expected $1"; exit 1; }
  "$app" ckpt verify ck > verify.out 2>&1 || { echo "FAIL: latest does not verify"; cat verify.out; exit 1; }
}
run train.steps=5 checkpoint.at_end=true > first.out 2>&1 || { echo "FAIL: first run"; cat first.out; exit 1; }
check_latest step-00000005.h5
for mode in mid_write after_write; do
  MINI5D_CKPT_FAIL=$mode run train.steps=10 checkpoint.every=5 resume=latest > $mode.out 2>&1
  [[ $? -ne 0 ]] || { echo "FAIL: MINI5D_CKPT_FAIL=$mode did not abort the save"; cat $mode.out; exit 1; }
  [[ ! -f ck/step-00000010.h5 ]] || { echo "FAIL: $mode left a committed step 10"; exit 1; }
  check_latest step-00000005.h5
done
run train.steps=10 checkpoint.every=5 resume=latest > third.out 2>&1 || { echo "FAIL: resume after faults"; cat third.out; exit 1; }
grep -q "^resumed from ck/step-00000005.h5" third.out || { echo "FAIL: did not resume from step 5"; cat third.out; exit 1; }
check_latest step-00000010.h5
# kill -9 of one rank (found by the PID file it writes, not the launcher) while it is
# inside a save: a run saving every step, killed once a step-N.h5.tmp exists.
rm -rf ck pids && mkdir pids
MINI5D_PID_DIR=$PWD/pids run train.steps=100000 checkpoint.every=1 checkpoint.keep=2 > killed.out 2>&1 &
pid=$!
for _ in $(seq 1 300); do grep -q "^step 20/" killed.out 2>/dev/null && break; sleep 0.1; done
[[ -s pids/rank-1.pid ]] || { echo "FAIL: rank 1 wrote no PID file"; cat killed.out; exit 1; }
rank1=$(cat pids/rank-1.pid)
shopt -s nullglob
seen=
for _ in $(seq 1 200000); do  # busy poll (no fork per iteration): a save lasts milliseconds
  tmps=(ck/*.h5.tmp)
  if (( ${#tmps[@]} )); then kill -KILL "$rank1"; seen=${tmps[0]}; break; fi
done
shopt -u nullglob
[[ -n $seen ]] || { echo "FAIL: never saw a save in progress"; kill -KILL "$pid"; exit 1; }
# The launcher ends the job when a rank dies; give it a moment, then make sure.
for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
kill -KILL "$(cat pids/rank-0.pid)" "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
echo "killed rank 1 (PID $rank1) while $seen was being written"
latest=$(head -1 ck/latest)
check_latest "$latest"
n=${latest%.h5}; n=$((10#${n#step-}))
run resume=latest train.steps=$((n + 2)) > after_kill.out 2>&1 ||
  { echo "FAIL: resume after kill -9"; cat after_kill.out; exit 1; }
grep -q "^step $((n + 2))/$((n + 2)) " after_kill.out || { echo "FAIL: resume after kill -9 did not reach step $((n + 2))"; cat after_kill.out; exit 1; }
echo "ok: injected failures and kill -9 left a valid latest ($latest) that resumes"
