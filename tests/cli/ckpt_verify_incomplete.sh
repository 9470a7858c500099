#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# `ckpt verify` checks what a resume reads: a checkpoint missing one dataset of its
# manifest fails verify, as it fails the resume, naming the dataset.
# usage: ckpt_verify_incomplete.sh WORKDIR EXPECT_ERROR CKPT_TOOL MINI5D_APP DECK
set -u
work=$1 expect=$2 tool=$3 app=$4 deck=$5
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
common=(checkpoint.dir=ck output.report=)
"$app" train "$deck" train.steps=2 checkpoint.at_end=true "${common[@]}" > first.out 2>&1 || { cat first.out; exit 1; }
"$app" ckpt verify ck > ok.out 2>&1 || { cat ok.out; echo "FAIL: a complete checkpoint does not verify"; exit 1; }
"$tool" unlink ck/step-00000002.h5 /optimizer/exp_avg/blocks/1/mlp/fc/weight || exit 1
"$expect" "ck/step-00000002.h5: missing dataset /optimizer/exp_avg/blocks/1/mlp/fc/weight (the manifest lists it)" \
  "$app" ckpt verify ck || exit 1
"$expect" "ck/step-00000002.h5: missing dataset /optimizer/exp_avg/blocks/1/mlp/fc/weight" \
  "$app" train "$deck" train.steps=4 "${common[@]}" resume=latest || exit 1
echo "ok: a missing dataset fails verify and resume alike"
