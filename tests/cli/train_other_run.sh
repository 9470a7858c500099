#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A fresh run never deletes another run's checkpoints. Run A (seed 1)
# saves steps 20, 25, 30 in ck; a fresh run B (seed 2) in the same directory is refused
# with a message naming the directory and run A; with checkpoint.overwrite=true it runs,
# its retention keeps its own newest three and all of A's; `latest` carries the run.
# usage: train_other_run.sh WORKDIR EXPECT_ERROR MINI5D_APP DECK
set -u
work=$1 expect=$2 app=$3 deck=$4
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
common=(checkpoint.dir=ck checkpoint.every=5 checkpoint.keep=3 output.report=)
"$app" train "$deck" train.seed=1 train.steps=30 "${common[@]}" > a.out 2>&1 || { echo "FAIL: run A"; cat a.out; exit 1; }
run_a=$(sed -n 's/^run //p' ck/latest)
[[ -n $run_a ]] || { echo "FAIL: no run identity in latest"; cat ck/latest; exit 1; }
"$expect" "ck: holds 3 checkpoints (step-00000020.h5 .. step-00000030.h5) of another run (run $run_a, latest step-00000030.h5)" \
  "$app" train "$deck" train.seed=2 train.steps=15 "${common[@]}" || exit 1
"$app" train "$deck" train.seed=2 train.steps=20 "${common[@]}" checkpoint.overwrite=true > b.out 2>&1 ||
  { echo "FAIL: run B with overwrite"; cat b.out; exit 1; }
names=$(cd ck && ls *.h5 | tr '\n' ' ')
[[ $names == "step-00000010.h5 step-00000015.h5 step-00000020.h5 step-00000025.h5 step-00000030.h5 " ]] ||
  { echo "FAIL: checkpoints after run B: $names"; exit 1; }
run_b=$(sed -n 's/^run //p' ck/latest)
[[ -n $run_b && $run_b != "$run_a" && $(head -1 ck/latest) == step-00000020.h5 ]] || { echo "FAIL: latest"; cat ck/latest; exit 1; }
"$app" ckpt info ck/step-00000025.h5 | grep -q "^run          $run_a$" || { echo "FAIL: run A's step 25 lost its identity"; exit 1; }
# A resume continues its run: B's identity stays, A's files are still not touched.
"$app" train "$deck" train.seed=2 train.steps=21 "${common[@]}" checkpoint.every=7 resume=latest > c.out 2>&1 ||
  { echo "FAIL: resume B"; cat c.out; exit 1; }
[[ $(sed -n 's/^run //p' ck/latest) == "$run_b" ]] || { echo "FAIL: resume changed the run identity"; exit 1; }
names=$(cd ck && ls *.h5 | tr '\n' ' ')
[[ $names == "step-00000015.h5 step-00000020.h5 step-00000021.h5 step-00000025.h5 step-00000030.h5 " ]] ||
  { echo "FAIL: checkpoints after resuming B: $names"; exit 1; }
echo "ok: fresh run refused beside run $run_a; with overwrite, run $run_b kept A's files"
