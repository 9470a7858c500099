#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Resuming from a bad checkpoint is a clear error naming the dataset, and nothing is
# overwritten: a flipped byte (checksum), a deck whose model has another width, and a
# missing checkpoint directory.
# usage: train_bad_checkpoint.sh WORKDIR EXPECT_ERROR CKPT_TOOL MINI5D_APP DECK
set -u
work=$1 expect=$2 tool=$3 app=$4 deck=$5
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
common=(checkpoint.dir=ck output.report=)
"$app" train "$deck" train.steps=3 checkpoint.at_end=true "${common[@]}" > first.out 2>&1 || { cat first.out; exit 1; }
cp ck/step-00000003.h5 pristine.h5
"$expect" "ck/step-00000003.h5: model.d_model is 64 in the checkpoint, 32 in the deck" \
  "$app" train "$deck" train.steps=6 model.d_model=32 "${common[@]}" resume=latest || exit 1
"$expect" "no_such_dir: no such checkpoint file or directory" \
  "$app" train "$deck" train.steps=6 "${common[@]}" resume=no_such_dir || exit 1
"$tool" flip ck/step-00000003.h5 /optimizer/exp_avg/lm_head/weight 5 || exit 1
"$expect" "ck/step-00000003.h5: checksum mismatch in dataset /optimizer/exp_avg/lm_head/weight" \
  "$app" train "$deck" train.steps=6 checkpoint.every=1 "${common[@]}" resume=latest || exit 1
# Nothing was written after the failed resumes: still one checkpoint, latest unchanged.
[[ $(ls ck/*.h5 | wc -l) -eq 1 && $(head -1 ck/latest) == step-00000003.h5 ]] || { echo "FAIL: checkpoints changed"; ls ck; exit 1; }
echo "ok: shape mismatch, missing checkpoint and checksum errors, nothing overwritten"
