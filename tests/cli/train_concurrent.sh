#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A second run in a checkpoint directory another run is using is
# refused at start-up (status 2, one line naming the directory and the holder), and the
# first run carries on, stops on SIGTERM with a checkpoint that verifies.
# usage: train_concurrent.sh WORKDIR EXPECT_ERROR MINI5D_APP DECK
set -u
work=$1 expect=$2 app=$3 deck=$4
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
common=(checkpoint.dir=ck checkpoint.every=1 checkpoint.keep=2 output.report= output.log_every=1)
"$app" train "$deck" train.steps=100000 "${common[@]}" > a.out 2>&1 &
pid=$!
for _ in $(seq 1 300); do grep -q "^step 3/" a.out 2>/dev/null && break; sleep 0.1; done
grep -q "^step 3/" a.out || { echo "FAIL: run A did not start"; cat a.out; kill -KILL $pid; exit 1; }
"$expect" "ck: another mini5d run is using this checkpoint directory (pid $pid on " \
  "$app" train "$deck" train.steps=100000 "${common[@]}" resume=latest
ok=$?
kill -TERM $pid; wait $pid; status=$?
[[ $ok -eq 0 ]] || exit 1
[[ $status -eq 0 ]] || { echo "FAIL: run A exit status $status"; cat a.out; exit 1; }
grep -q "^stopped by signal 15 at step " a.out || { echo "FAIL: run A did not stop on SIGTERM"; cat a.out; exit 1; }
"$app" ckpt verify ck > verify.out 2>&1 || { echo "FAIL: run A's latest does not verify"; cat verify.out; exit 1; }
echo "ok: second run refused while the first held ck; the first saved and verified"
