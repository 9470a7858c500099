#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Depths that no even pipeline cut fits, as published runs have them: a 70-layer model on
# 12 stages and a 126-layer model on 16 are planned with --layout (the split printed by
# --explain), their full decks pass `mini5d check` and carry the split, their scaled-down
# decks train; and a 5-layer deck planned at p = 2 on this box trains as emitted on two
# ranks, with the split the planner printed (3,2) in the start-up header.
# usage: plan_uneven_stages.sh MINI5D_PLAN MINI5D SOURCE_DIR WORKDIR MPIEXEC
set -euo pipefail
plan=$1; app=$2; src=$3; work=$4; mpiexec=$5
mkdir -p "$work" && cd "$work"
sed 's/^  layers: 80/  layers: 70/; s/^  name: dense-70b/  name: dense-70l/' "$src/inputs/models/dense-70b.yaml" > m70.yaml
sed 's/^  layers: 128/  layers: 126/; s/^  name: dense-400b/  name: dense-126l/' "$src/inputs/models/dense-400b.yaml" > m126.yaml
grep -q '^  layers: 70\b' m70.yaml && grep -q '^  layers: 126\b' m126.yaml || { echo "FAIL: could not derive the models"; exit 1; }
for case in "m70 12 96" "m126 16 256"; do
  set -- $case
  model=$1; p=$2; nodes=$3
  out=$("$plan" --model "$model.yaml" --cluster "$src/inputs/clusters/h100-sxm-8.yaml" --nodes "$nodes" \
        --layout "t=8,p=$p,recompute=full" --explain --emit-deck "$model.deck.yaml" 2>&1) ||
    { echo "FAIL $model: mini5d-plan refused p=$p:"; echo "$out" | tail -5; exit 1; }
  echo "$out" | grep -E "^p=$p: .* $p stages of [0-9+]+ layers" ||
    { echo "FAIL $model: --explain does not print the uneven split"; echo "$out" | grep "^p=" ; exit 1; }
  split=$(sed -n 's/^  # blocks per virtual stage: //p' "$model.deck.yaml")
  sum=0; n=0
  for b in ${split//,/ }; do sum=$((sum + b)); n=$((n + 1)); done
  [ "$n" = "$p" ] && [ "$sum" = "$(sed -n 's/^  layers: *\([0-9]*\).*/\1/p' "$model.yaml")" ] ||
    { echo "FAIL $model: emitted split '$split' is not $p stages summing to the layers"; exit 1; }
  "$app" check "$model.deck.yaml" > "$model.check" 2>&1 || { echo "FAIL $model: check refused the deck"; cat "$model.check"; exit 1; }
  "$plan" --model "$model.yaml" --cluster "$src/inputs/clusters/h100-sxm-8.yaml" --nodes "$nodes" \
    --layout "t=8,p=$p,recompute=full" --emit-deck "$model.small.yaml" --scale-down > /dev/null
  "$app" train "$model.small.yaml" train.steps=2 output.report= checkpoint.dir="ck-$model" > "$model.train" 2>&1 ||
    { echo "FAIL $model: the scaled-down deck does not train"; tail -5 "$model.train"; exit 1; }
  echo "$model on p=$p: blocks per stage $split"
done
# A deck as the model: 5 blocks on 2 stages of this box; the deck the planner emits trains.
sed 's/^  layers: 2 .*/  layers: 5/' "$src/inputs/tiny.yaml" > tiny5-model.yaml
grep -q '^  layers: 5$' tiny5-model.yaml || { echo "FAIL: could not derive the 5-layer deck"; exit 1; }
"$plan" --model tiny5-model.yaml --cluster "$src/inputs/clusters/cpu-2core.yaml" \
  --layout "p=2,mb=4,m=4" --emit-deck tiny5.yaml > plan5.out 2>&1 || { echo "FAIL: planning tiny at p=2"; cat plan5.out; exit 1; }
planned=$(sed -n 's/^  # blocks per virtual stage: //p' tiny5.yaml)
[ "$planned" = "3,2" ] || { echo "FAIL: tiny 5 blocks on p=2 planned as '$planned', want 3,2"; exit 1; }
out=$("$mpiexec" -n 2 "$app" train tiny5.yaml train.steps=2 output.report= checkpoint.dir=ck-tiny5 parallel.ranks_per_node=2 2>&1) ||
  { echo "FAIL: the emitted p=2 deck does not train"; echo "$out" | tail -8; exit 1; }
echo "$out" | grep -q "blocks per virtual stage 3,2 (auto)" ||
  { echo "FAIL: the run's header does not show the planned split"; echo "$out" | grep pipeline; exit 1; }
echo "tiny with 5 blocks: planned 3,2 at p=2 and trained as emitted"
