#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A resume keeps the model and the data: a changed model or data field is refused, one
# line per field with both values, exit 2, once under mpiexec (also with another
# layout); a changed learning rate or step count is allowed and listed at start-up.
# usage: train_resume_changed.sh WORKDIR MPIEXEC NP_FLAG EXPECT_OUTPUT MINI5D_APP DECK
set -u
work=$1 mpiexec=$2 npflag=$3 expect_out=$4 app=$5 deck=$6
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
common=(checkpoint.dir=ck output.report=)
"$app" train "$deck" train.steps=2 checkpoint.at_end=true "${common[@]}" > first.out 2>&1 || { cat first.out; fail "first run"; }
# Two ranks, another layout (the same global batch of 16): still refused, once.
"$mpiexec" "$npflag" 2 "$app" train "$deck" train.steps=4 parallel.d=2 train.micro_batch=8 model.heads=2 \
  data.markov_order=3 model.tie_embeddings=true "${common[@]}" resume=latest > /dev/null 2> refused.err
status=$?
[[ $status -eq 2 ]] || { cat refused.err; fail "changed model and data: status $status, expected 2"; }
for want in "ck/step-00000002.h5: model.heads is 4 in the checkpoint, 2 in the deck" \
            "ck/step-00000002.h5: data.markov_order is 2 in the checkpoint, 3 in the deck" \
            "ck/step-00000002.h5: model.tie_embeddings is false in the checkpoint, true in the deck"; do
  [[ $(grep -cF -- "$want" refused.err) -eq 1 ]] || { cat refused.err; fail "not once: $want"; }
done
grep -qF "parallel.d" refused.err && { cat refused.err; fail "a layout change was refused"; }
"$expect_out" "resume: train.lr changed 0.01 -> 0.005" "resume: train.steps changed 2 -> 3" \
  -- "$app" train "$deck" train.steps=3 train.lr=0.005 checkpoint.dir=ck output.report=resumed.json resume=latest ||
  fail "allowed changes"
python3 - resumed.json <<'PY' || fail "the report's resume record lacks the changes"
import json, sys
loads = [c for c in json.load(open(sys.argv[1]))["checkpoints"] if c["kind"] == "load"]
assert len(loads) == 1, loads
assert sorted(loads[0]["changes"]) == ["resume: train.lr changed 0.01 -> 0.005", "resume: train.steps changed 2 -> 3"], loads
PY
echo "ok: model and data changes refused field by field, lr and steps listed"
