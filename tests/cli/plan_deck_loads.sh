#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The planner's --emit-deck output is a deck mini5d accepts: the full-size deck passes
# `mini5d check` (its multi-rank layout listed as not yet runnable at most), and the
# --scale-down deck trains for two steps on one rank.
# usage: plan_deck_loads.sh MINI5D_PLAN MINI5D SOURCE_DIR WORKDIR
set -eu
plan=$1; app=$2; src=$3; work=$4
mkdir -p "$work" && cd "$work"
"$plan" --model "$src/inputs/models/gpt2-124m.yaml" --cluster "$src/inputs/clusters/h100-sxm-8.yaml" \
  --nodes 2 --emit-deck full.yaml >/dev/null
"$app" check full.yaml | head -n 5
"$plan" --model "$src/inputs/models/gpt2-124m.yaml" --cluster "$src/inputs/clusters/h100-sxm-8.yaml" \
  --nodes 2 --emit-deck small.yaml --scale-down >/dev/null
"$app" check small.yaml | head -n 3
"$app" train small.yaml train.steps=2 train.recompute=none output.report= | grep '^FOM'
