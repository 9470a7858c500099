#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A run that cannot fit is refused before anything is allocated, with
# the need per rank and the free memory; train.allow_oversubscribe_memory=true starts it
# anyway. MINI5D_AVAILABLE_MEMORY_MB stands in for the node's free memory.
# usage: memory_fit.sh WORKDIR MPIEXEC NP_FLAG MINI5D_APP DECK
set -u
work=$1 mpiexec=$2 npflag=$3 app=$4 deck=$5
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
run() { timeout -s KILL 60 "$mpiexec" "$npflag" 2 "$app" train "$deck" parallel.d=2 train.micro_batch=8 train.steps=2 \
          output.report= checkpoint.dir=ck "$@" > run.out 2> run.err; }
MINI5D_AVAILABLE_MEMORY_MB=2 run
status=$?
[[ $status -eq 2 ]] || { echo "FAIL: exit status $status, expected 2"; cat run.err; exit 1; }
want="^mini5d: error: $deck with parallel\.d=2 train\.micro_batch=8 train\.steps=2 output\.report= checkpoint\.dir=ck: the run needs [0-9.]+ MiB per rank \(training state [0-9.]+ MiB, activations [0-9.]+ MiB, workspace [0-9.]+ MiB\), 2 ranks on this node need [0-9.]+ MiB together, but 2.0 MiB is free \(MINI5D_AVAILABLE_MEMORY_MB\);"
[[ $(wc -l < run.err) -eq 1 ]] && grep -Eq "$want" run.err || { echo "FAIL: not the one line expected"; cat run.err; exit 1; }
! grep -q "^step " run.out || { echo "FAIL: it trained"; exit 1; }
echo "ok: refused before training: $(cat run.err)"
MINI5D_AVAILABLE_MEMORY_MB=2 run train.allow_oversubscribe_memory=true ||
  { echo "FAIL: train.allow_oversubscribe_memory=true did not start"; cat run.err; exit 1; }
grep -q "^step 2/2 " run.out || { echo "FAIL: did not train with allow_oversubscribe_memory"; cat run.out; exit 1; }
echo "ok: train.allow_oversubscribe_memory=true trains"
