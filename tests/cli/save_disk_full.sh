#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A checkpoint save on a full disk, at -n 2 and -n 1. A small
# tmpfs (in a private mount namespace) holds the step-4 checkpoint and has no room for
# the step-8 one. The run must end (no hang) with status 1 and one line naming the
# temporary file and "No space left on device", leave `latest` on step 4 (which
# verifies), and leave no .tmp behind. Then a write failure on one rank only, after the
# space check (MINI5D_CKPT_FAIL=write_error), must end the same way on every rank.
# Skips (77) where no tmpfs can be mounted.
# usage: save_disk_full.sh WORKDIR MPIEXEC NP_FLAG MINI5D_APP DECK
set -u
source "$(dirname "$0")/lib.sh"
save_test_setup "$0" "$@"
check_kept() {  # DIR: latest still names step 4, it verifies, no temporary is left
  [[ $(head -1 "$1/latest") == step-00000004.h5 ]] || fail "latest is $(head -1 "$1/latest"), expected step-00000004.h5"
  "$app" ckpt verify "$1" > verify.out 2>&1 || { cat verify.out; fail "latest does not verify"; }
  ! ls "$1"/*.tmp > /dev/null 2>&1 || fail "temporary left behind: $(ls "$1"/*.tmp)"
}
for np in 2 1; do
  mkdir -p full$np
  # The tiny deck's checkpoint is 1.3 MB: room for one, not two.
  mount -t tmpfs -o size=1600k tmpfs full$np 2>/dev/null || { echo "SKIP: cannot mount a tmpfs here"; exit 77; }
  run $np train.steps=12 checkpoint.dir=full$np/ck
  status=$?
  [[ $status -eq 1 ]] || fail "-n $np: exit status $status, expected 1 (137: it hung)"
  want="mini5d: error: full$np/ck/step-00000008.h5.tmp: No space left on device (the checkpoint needs up to "
  [[ $(wc -l < run.err) -eq 1 && $(grep -cF "$want" run.err) -eq 1 ]] || fail "-n $np: not one line naming the file and the OS error"
  check_kept full$np/ck
  umount full$np
  echo "ok: -n $np full disk: one line, latest kept, no temporary"
done
rm -rf ck
run 2 checkpoint.dir=ck train.steps=4 || fail "the first save for the write_error case"
MINI5D_CKPT_FAIL=write_error run 2 train.steps=12 checkpoint.dir=ck resume=latest
status=$?
[[ $status -eq 1 ]] || fail "write_error: exit status $status, expected 1 (137: it hung)"
[[ $(wc -l < run.err) -eq 1 ]] && grep -q "^mini5d: error: ck/step-00000008.h5.tmp: writing .* failed on rank 1: MINI5D_CKPT_FAIL=write_error" run.err ||
  fail "write_error: not one line naming the file and the rank"
check_kept ck
echo "ok: a write failing on one rank ends every rank cleanly, latest kept, no temporary"
