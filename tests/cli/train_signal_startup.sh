#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A SIGUSR1 that arrives during start-up (as Slurm's --signal=USR1@N
# does on a requeued job) is not lost: the run trains to the first step boundary,
# saves there and exits 0. The signal is sent as soon as the run has locked its
# checkpoint directory, long before the training loop. Then the two windows around
# MPI_Init: the signal raised by the process itself just before MPI_Init (where only
# the handler installed first in main can catch it; without one it kills the run, exit
# 138) and just after it, while MPICH's own SIGUSR1 handler is the one installed (which
# passes it to the handler it found; without one the signal was swallowed and the run
# trained to the end without a checkpoint).
# usage: train_signal_startup.sh WORKDIR MPIEXEC NP_FLAG MINI5D_APP DECK
set -u
work=$1 mpiexec=$2 npflag=$3 app=$4 deck=$5
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
for np in 1 2; do
  rm -rf ck
  if [[ $np -eq 1 ]]; then launch=("$app"); else launch=("$mpiexec" "$npflag" 2 "$app"); fi
  "${launch[@]}" train "$deck" train.steps=1000 parallel.d=$np train.micro_batch=$((16 / np)) checkpoint.dir=ck \
    output.report= output.log_every=1 > run$np.out 2>&1 &
  pid=$!
  for _ in $(seq 1 2000); do [[ -e ck/mini5d.lock ]] && break; sleep 0.005; done
  [[ -e ck/mini5d.lock ]] || { echo "FAIL: -n $np: the run never locked ck"; kill -KILL $pid; exit 1; }
  kill -USR1 $pid
  wait $pid; status=$?
  [[ $status -eq 0 ]] || { echo "FAIL: -n $np: exit status $status after SIGUSR1 in start-up"; cat run$np.out; exit 1; }
  line=$(grep "^stopped by signal 10 at step " run$np.out) || { echo "FAIL: -n $np: no stop line"; cat run$np.out; exit 1; }
  step=$(sed 's/.* at step \([0-9]*\) .*/\1/' <<<"$line")
  [[ -f $(printf 'ck/step-%08d.h5' "$step") ]] || { echo "FAIL: -n $np: no checkpoint at step $step"; ls ck; exit 1; }
  echo "ok: -n $np: SIGUSR1 in start-up honoured at step $step"
done
for point in before_mpi_init after_mpi_init; do
  for np in 1 2; do
    rm -rf ck
    if [[ $np -eq 1 ]]; then launch=("$app"); else launch=("$mpiexec" "$npflag" 2 "$app"); fi
    MINI5D_TEST_RAISE=$point timeout -s KILL 120 "${launch[@]}" train "$deck" train.steps=400 parallel.d=$np \
      train.micro_batch=$((16 / np)) checkpoint.dir=ck output.report= output.log_every=1 > run$np.out 2>&1
    status=$?
    [[ $status -eq 0 ]] || { echo "FAIL: $point -n $np: exit status $status (138: killed by the signal)"; cat run$np.out; exit 1; }
    line=$(grep "^stopped by signal 10 at step " run$np.out) ||
      { echo "FAIL: $point -n $np: the signal was lost (no stop line)"; tail -3 run$np.out; exit 1; }
    step=$(sed 's/.* at step \([0-9]*\) .*/\1/' <<<"$line")
    [[ $step -le 2 ]] || { echo "FAIL: $point -n $np: stopped at step $step, not the first boundary"; exit 1; }
    [[ -f $(printf 'ck/step-%08d.h5' "$step") ]] || { echo "FAIL: $point -n $np: no checkpoint at step $step"; ls ck; exit 1; }
    echo "ok: $point -n $np: SIGUSR1 honoured at step $step"
  done
done
