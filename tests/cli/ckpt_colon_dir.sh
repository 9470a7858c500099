#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A ':' in checkpoint.dir (a timestamp, run-12:00): ROMIO reads the text before a ':' as
# a file-system type, so every save used to fail after training ("iofstypeunsupported")
# and a checkpoint there read as "not a readable HDF5 file". The save now names ROMIO's
# generic driver ("ufs:" on the absolute path): a run at 2 ranks saves there, `ckpt
# verify` reads it, and a run at 1 rank resumes from it and saves again.
# usage: ckpt_colon_dir.sh WORKDIR MPIEXEC NP_FLAG MINI5D_APP DECK
set -u
work=$1 mpiexec=$2 npflag=$3 app=$4 deck=$5
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
fail() { echo "FAIL: $*"; cat run.out run.err 2>/dev/null | tail -5; exit 1; }
dir="run-12:00/at:2"
timeout -s KILL 60 "$mpiexec" "$npflag" 2 "$app" train "$deck" parallel.d=2 train.micro_batch=8 train.steps=2 \
  checkpoint.at_end=true checkpoint.dir="$dir" output.report= > run.out 2> run.err || fail "the 2-rank run failed"
[[ -f "$dir/step-00000002.h5" && $(head -n 1 "$dir/latest") == step-00000002.h5 ]] || fail "no checkpoint in $dir"
ls "$dir" | grep -q '\.tmp$' && fail "a temporary was left in $dir"
"$app" ckpt verify "$dir" > run.out 2> run.err || fail "ckpt verify of $dir"
grep -qF "$dir/step-00000002.h5: OK" run.out || fail "ckpt verify did not say OK"
timeout -s KILL 60 "$app" train "$deck" train.steps=4 checkpoint.at_end=true checkpoint.dir="$dir" resume=latest \
  output.report= > run.out 2> run.err || fail "the resume from $dir failed"
grep -qF "resumed from $dir/step-00000002.h5 at step 2" run.out || fail "not resumed from $dir"
[[ $(head -n 1 "$dir/latest") == step-00000004.h5 ]] || fail "the resumed run did not save"
echo "ok: a checkpoint.dir with ':' saves, verifies and resumes"
