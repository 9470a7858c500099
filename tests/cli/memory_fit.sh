#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A run that cannot fit is refused before anything is allocated, with
# the need per rank and the free memory; train.allow_oversubscribe_memory=true starts it
# anyway. MINI5D_AVAILABLE_MEMORY_MB stands in for the node's free memory. The data
# source counts too: a Markov table of 4096^2 contexts (960 MiB per rank) that does not
# fit is refused before it is built (it used to be built first, minutes and gigabytes,
# with no output), and one that fits is announced, reports progress and stops on
# SIGTERM within a second instead of finishing the build.
# usage: memory_fit.sh WORKDIR MPIEXEC NP_FLAG MINI5D_APP DECK
set -u
work=$1 mpiexec=$2 npflag=$3 app=$4 deck=$5
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
run() { timeout -s KILL 60 "$mpiexec" "$npflag" 2 "$app" train "$deck" parallel.d=2 train.micro_batch=8 train.steps=2 \
          output.report= checkpoint.dir=ck "$@" > run.out 2> run.err; }
MINI5D_AVAILABLE_MEMORY_MB=2 run
status=$?
[[ $status -eq 2 ]] || { echo "FAIL: exit status $status, expected 2"; cat run.err; exit 1; }
want="^mini5d: error: $deck with parallel\.d=2 train\.micro_batch=8 train\.steps=2 output\.report= checkpoint\.dir=ck: the run needs [0-9.]+ MiB per rank \(training state [0-9.]+ MiB, activations [0-9.]+ MiB, workspace [0-9.]+ MiB, data tables [0-9.]+ [KMG]i?B\), 2 ranks on this node need [0-9.]+ MiB together, but 2.0 MiB is free \(MINI5D_AVAILABLE_MEMORY_MB\);"
[[ $(wc -l < run.err) -eq 1 ]] && grep -Eq "$want" run.err || { echo "FAIL: not the one line expected"; cat run.err; exit 1; }
! grep -q "^step " run.out || { echo "FAIL: it trained"; exit 1; }
echo "ok: refused before training: $(cat run.err)"
MINI5D_AVAILABLE_MEMORY_MB=2 run train.allow_oversubscribe_memory=true ||
  { echo "FAIL: train.allow_oversubscribe_memory=true did not start"; cat run.err; exit 1; }
grep -q "^step 2/2 " run.out || { echo "FAIL: did not train with allow_oversubscribe_memory"; cat run.out; exit 1; }
echo "ok: train.allow_oversubscribe_memory=true trains"

big=(model.vocab=4096 data.markov_order=2)
start=$(date +%s)
MINI5D_AVAILABLE_MEMORY_MB=500 run "${big[@]}"
status=$? took=$(( $(date +%s) - start ))
[[ $status -eq 2 ]] || { echo "FAIL: Markov table: exit status $status, expected 2 (137: it was being built)"; cat run.err; exit 1; }
[[ $(wc -l < run.err) -eq 1 ]] && grep -q "data tables 960.0 MiB), 2 ranks on this node need .* a smaller Markov table (data.markov_order, data.markov_branching)" run.err ||
  { echo "FAIL: Markov table: not one line naming the data tables"; cat run.err; exit 1; }
[[ $took -le 20 ]] || { echo "FAIL: Markov table: refused after $took s (it was built first)"; exit 1; }
echo "ok: a Markov table that does not fit is refused in $took s, before it is built"
timeout -s KILL 60 "$app" train "$deck" "${big[@]}" train.steps=2 output.report= checkpoint.dir=ck > big.out 2> big.err &
pid=$!
for _ in $(seq 1 200); do grep -q "^data: building a Markov table of 4096^2 contexts x 3 successors (0.94 GiB on every rank)" big.out && break; sleep 0.1; done
grep -q "^data: building a Markov table" big.out || { kill -KILL $pid; echo "FAIL: the build was not announced"; cat big.out big.err; exit 1; }
sleep 1
sent=$(date +%s.%N)
kill -TERM $pid; wait $pid; status=$?
stop=$(python3 -c "import sys,time; print('%.1f' % (time.time() - float(sys.argv[1])))" "$sent")
[[ $status -eq 1 ]] || { echo "FAIL: SIGTERM in the build: exit status $status, expected 1"; cat big.err; exit 1; }
grep -qx "mini5d: error: stopped by signal 15 while building the data source; nothing was trained or saved" big.err ||
  { echo "FAIL: SIGTERM in the build: not the one line"; cat big.err; exit 1; }
python3 -c "import sys; sys.exit(float(sys.argv[1]) > 15)" "$stop" || { echo "FAIL: SIGTERM took $stop s to stop the build"; exit 1; }
echo "ok: the table build is announced and stops $stop s after SIGTERM"
