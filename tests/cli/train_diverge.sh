#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A diverging run (learning rate and weight decay 10) never leaves a NaN checkpoint.
# Non-finite steps are skipped and logged, too many in a row (or a loss spike) stop the
# run with one clear line and exit 1, the FOM says valid=0, `latest` verifies and
# resumes, and `ckpt verify` names a dataset holding NaN even when its checksum matches.
# The skip is agreed over the ranks: the same at -n 2 with ZeRO 3.
# usage: train_diverge.sh WORKDIR CKPT_TOOL MPIEXEC NP_FLAG MINI5D_APP DECK
set -u
work=$1 tool=$2 mpiexec=$3 npflag=$4 app=$5 deck=$6
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
diverge=(train.lr=10 train.min_lr=10 train.warmup=0 train.weight_decay=10 checkpoint.every=4 checkpoint.keep=1
         train.steps=40 output.log_every=1)
fail() { echo "FAIL: $*"; for f in "${files[@]}"; do echo "--- $f"; tail -20 "$f"; done; exit 1; }
files=(skip.out skip.err)
"$app" train "$deck" "${diverge[@]}" train.spike_factor=0 checkpoint.dir=ck output.report=skip.json > skip.out 2> skip.err
status=$?
[[ $status -eq 1 ]] || fail "exit status $status, expected 1"
[[ $(grep -c "^mini5d: error: step [0-9]*: non-finite .* consecutive steps (train.max_skipped=5)" skip.err) -eq 1 ]] ||
  fail "no single stop line on stderr"
# Which of the two turns non-finite first (the loss or the gradient norm) depends on the
# rounding of the steps before: either is a skip.
grep -Eq "^step [0-9]*/40  skipped: non-finite (gradient norm|loss) NaN; parameters and moments unchanged" skip.out ||
  fail "no skipped step logged"
grep -q "^FOM mini5d .* valid=0$" skip.out || fail "FOM not valid=0"
python3 - <<'PY' || fail "report"
import json
r = json.load(open("skip.json"))
assert r["valid"] is False and r["skipped_steps"] > 0 and "max_skipped" in r["halted"], r
assert any(s["skipped"] for s in r["steps"])
PY
"$app" ckpt verify ck > verify.out 2>&1 || fail "latest does not verify: $(cat verify.out)"
"$app" train "$deck" train.steps=$(( $(sed 's/step-0*\([0-9]*\).h5/\1/' <(head -1 ck/latest)) + 1 )) checkpoint.dir=ck \
  output.report= resume=latest > resume.out 2>&1
grep -q "^resumed from ck/step-" resume.out || fail "resume from latest: $(cat resume.out)"
files=(np2.out np2.err)
"$mpiexec" "$npflag" 2 "$app" train "$deck" "${diverge[@]}" train.spike_factor=0 parallel.d=2 parallel.zero=3 \
  train.micro_batch=8 checkpoint.dir=ck3 output.report= > np2.out 2> np2.err
status=$?
[[ $status -eq 1 ]] || fail "-n 2: exit status $status, expected 1"
[[ $(grep -c "^mini5d: error: step [0-9]*: non-finite .* consecutive steps" np2.err) -eq 1 ]] || fail "-n 2: stop line"
grep -q "skipped: non-finite" np2.out || fail "-n 2: no skipped step logged"
"$app" ckpt verify ck3 > verify3.out 2>&1 || fail "-n 2: latest does not verify: $(cat verify3.out)"
# The default train.spike_factor stops this run at its first spike, before any NaN.
files=(spike.out spike.err)
"$app" train "$deck" "${diverge[@]}" checkpoint.dir=ck2 output.report= > spike.out 2> spike.err
status=$?
[[ $status -eq 1 ]] || fail "spike: exit status $status, expected 1"
grep -q "^mini5d: error: step [0-9]*: loss .* is over train.spike_factor=10 x the mean" spike.err || fail "no spike line"
"$app" ckpt verify ck2 > verify2.out 2>&1 || fail "spike: latest does not verify"
# A NaN whose checksum matches (as a save from a diverged state would have had).
latest=ck/$(head -1 ck/latest)
"$tool" poison "$latest" /model/blocks/0/attn/proj/weight 3 || fail "poison"
files=(poisoned.err)
"$app" ckpt verify ck > /dev/null 2> poisoned.err
status=$?
[[ $status -eq 2 ]] || fail "verify of a NaN checkpoint: exit status $status, expected 2"
grep -q "$latest: dataset /model/blocks/0/attn/proj/weight holds 1 NaN or infinite values" poisoned.err || fail "verify message"
echo "ok: skipped and stopped (exit 1, valid=0), latest verifies and resumes, spike stops, NaN named by verify"
