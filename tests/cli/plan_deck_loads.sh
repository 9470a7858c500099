#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Every deck the planner emits runs: for every shipped model file (inputs/models) on
# every shipped cluster (inputs/clusters), the full-size deck passes `mini5d check`
# (its vocabulary gets a data source that accepts it; a precision or layout this build
# cannot train is a "# note", not an error), carries the planned precision (the planner
# reads it back from the deck), and the --scale-down deck trains for two steps on one
# rank. A pair that fits nowhere (exit 3) must say so and is counted.
# One search per pair: `--tune 1 --scale-down` writes the best plan's deck and its
# single-rank version together (a search on 16384 devices takes up to 5 s; three per pair
# made this the suite's second-longest test). For the first pair that fits, the two decks
# are checked to be the ones --emit-deck and --emit-deck --scale-down write.
# usage: plan_deck_loads.sh MINI5D_PLAN MINI5D SOURCE_DIR WORKDIR
set -euo pipefail
plan=$1; app=$2; src=$3; work=$4
mkdir -p "$work" && cd "$work"
ran=0; nofit=0
# The best plan's two decks into the folder $tag (reads tag, model, cluster, prec).
plan_best() {
  rm -rf "$tag" && "$plan" --model "$model" --cluster "$cluster" "${prec[@]}" --tune 1 --scale-down \
    --tune-dir "$tag" 2>&1 >/dev/null
}
for model in "$src"/inputs/models/*.yaml; do
  for cluster in "$src"/inputs/clusters/*.yaml; do
    tag="$(basename "$model" .yaml)@$(basename "$cluster" .yaml)"
    # A device without the model's precision (the CPU box has no bf16 rate) is planned
    # in fp32, which the planner's error message asks for.
    want=$(sed -n 's/^  precision: *\([a-z0-9]*\).*/\1/p' "$model"); want=${want:-fp32}
    prec=()
    set +e
    err=$(plan_best)
    rc=$?
    if [ $rc -eq 2 ] && echo "$err" | grep -q 'choose another --precision'; then
      want=fp32; prec=(--precision fp32)
      err=$(plan_best)
      rc=$?
    fi
    set -e
    if [ $rc -eq 3 ]; then
      echo "$err" | grep -Eq '^mini5d-plan: (model does not fit|no valid layout)' || { echo "FAIL $tag: exit 3 without the message: $err"; exit 1; }
      echo "$tag: does not fit (as the planner says)"; nofit=$((nofit + 1)); continue
    fi
    [ $rc -eq 0 ] || { echo "FAIL $tag: mini5d-plan exit $rc: $err"; exit 1; }
    mv "$tag/plan-1.yaml" "$tag.yaml" && mv "$tag/plan-1-scaled.yaml" "$tag-small.yaml" ||
      { echo "FAIL $tag: --tune 1 --scale-down did not write both decks"; ls "$tag"; exit 1; }
    if [ $ran -eq 0 ]; then  # the tuning decks are the emitted decks
      "$plan" --model "$model" --cluster "$cluster" "${prec[@]}" --emit-deck emitted.yaml >/dev/null 2>&1
      "$plan" --model "$model" --cluster "$cluster" "${prec[@]}" --emit-deck emitted-small.yaml --scale-down >/dev/null 2>&1
      cmp -s emitted.yaml "$tag.yaml" && cmp -s emitted-small.yaml "$tag-small.yaml" ||
        { echo "FAIL $tag: --tune's decks differ from --emit-deck's"; diff emitted.yaml "$tag.yaml"; exit 1; }
    fi
    "$app" check "$tag.yaml" >"$tag.check" 2>&1 || { echo "FAIL $tag: mini5d check refused the full deck:"; cat "$tag.check"; exit 1; }
    # The precision survives the round trip through the deck.
    got=$(sed -n 's/^  precision: *\([a-z0-9]*\).*/\1/p' "$tag.yaml")
    [ "$got" = "$want" ] || { echo "FAIL $tag: deck precision '$got', model file '$want'"; exit 1; }
    # The planner reads the precision back from the deck: its header's "state" line comes
    # before any search, so one node of the cluster (a search of a few layouts, exit 3
    # where the model needs more) shows it.
    set +e
    back=$("$plan" --model "$tag.yaml" --cluster "$cluster" --nodes 1 --top 1 2>/dev/null)
    rc=$?
    set -e
    { [ $rc -eq 0 ] || [ $rc -eq 3 ]; } && grep -q "^state   $want " <<<"$back" ||
      { echo "FAIL $tag: planning from the emitted deck lost precision $want (exit $rc)"; exit 1; }
    "$app" check "$tag-small.yaml" >/dev/null 2>&1 || { echo "FAIL $tag: check refused the scaled-down deck"; "$app" check "$tag-small.yaml" 2>&1 | tail -5; exit 1; }
    out=$("$app" train "$tag-small.yaml" train.steps=2 output.report= checkpoint.dir="ck-$tag" 2>&1) ||
      { echo "FAIL $tag: the scaled-down deck does not train:"; echo "$out" | tail -n 8; exit 1; }
    echo "$out" | grep -q '^FOM mini5d tokens_per_s=' || { echo "FAIL $tag: no FOM line"; exit 1; }
    echo "$tag: full deck checks, scaled-down deck trains"
    ran=$((ran + 1))
  done
done
echo "emitted and ran $ran model/cluster pairs; $nofit do not fit"
[ $ran -ge 8 ] || { echo "FAIL: expected at least 8 pairs that fit"; exit 1; }
