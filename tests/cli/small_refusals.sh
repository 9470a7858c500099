#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Smaller refusals, each one line naming what is wrong, status 2:
# a misspelt MINI5D_CKPT_FAIL (a crash-safety test that would pass without its failure
# ever happening) is refused before training; and, already refused on the base (kept as
# regressions), `latest` as a directory, `mini5d-plan --model` given a directory, and
# `--emit-slurm` onto a device node.
# usage: small_refusals.sh WORKDIR MINI5D_APP MINI5D_PLAN DECK MODEL CLUSTER
set -u
work=$1 app=$2 plan=$3 deck=$4 model=$5 cluster=$6
expect=$(cd "$(dirname "$0")" && pwd)/expect_error.sh
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
MINI5D_CKPT_FAIL=mid_writ "$expect" \
  'MINI5D_CKPT_FAIL: "mid_writ" is not a fail point (valid: mid_write, after_write,' \
  timeout -s KILL 60 "$app" train "$deck" train.steps=2 checkpoint.dir=ck output.report= || exit 1
[[ ! -e ck/latest ]] || { echo "FAIL: a run with a misspelt MINI5D_CKPT_FAIL trained and saved"; exit 1; }
mkdir -p ckd/latest
"$expect" "ckd/latest: is a directory, not a regular file" timeout -s KILL 60 "$app" ckpt verify ckd || exit 1
"$expect" "$work: is a directory, not a regular file" timeout -s KILL 60 "$plan" --model "$work" --cluster "$cluster" || exit 1
"$expect" "/dev/null: cannot write file (is a character device, not a regular file)" \
  timeout -s KILL 60 "$plan" --model "$model" --cluster "$cluster" --emit-slurm /dev/null || exit 1
