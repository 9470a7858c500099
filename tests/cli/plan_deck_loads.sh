#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The planner's --emit-deck output is a deck mini5d accepts: the full-size deck passes
# `mini5d check` (its multi-rank layout listed as not yet runnable at most), and the
# --scale-down deck trains, as emitted (only shortened to two steps), on one rank.
# The scaled-down deck keeps the plan's knobs (recompute included); while this build
# refuses a knob the plan picked, the test exits 77 (CTest: skipped, visibly) — only
# when that refusal is the deck's one problem.
# usage: plan_deck_loads.sh MINI5D_PLAN MINI5D SOURCE_DIR WORKDIR
set -euo pipefail
plan=$1; app=$2; src=$3; work=$4
mkdir -p "$work" && cd "$work"
"$plan" --model "$src/inputs/models/gpt2-124m.yaml" --cluster "$src/inputs/clusters/h100-sxm-8.yaml" \
  --nodes 2 --emit-deck full.yaml >/dev/null
out=$("$app" check full.yaml)  # set -e: a failing check fails the test
echo "$out" | sed -n 1,5p
"$plan" --model "$src/inputs/models/gpt2-124m.yaml" --cluster "$src/inputs/clusters/h100-sxm-8.yaml" \
  --nodes 2 --emit-deck small.yaml --scale-down >/dev/null
out=$("$app" check small.yaml)
echo "$out" | sed -n 1,3p
set +e
out=$("$app" train small.yaml train.steps=2 output.report= 2>&1)
rc=$?
set -e
echo "$out" | tail -n 5
if [ $rc -ne 0 ]; then
  problems=$(echo "$out" | grep -c 'not implemented in this build' || true)
  if [ "$problems" -eq 1 ] && echo "$out" | grep -q 'train.recompute=[a-z]*: not implemented in this build'; then
    echo "SKIP: the plan picked a recompute mode this build cannot train yet"
    exit 77
  fi
  echo "FAIL: the emitted deck does not train (exit $rc)"
  exit 1
fi
echo "$out" | grep -q '^FOM mini5d tokens_per_s=' || { echo "FAIL: no FOM line"; exit 1; }
