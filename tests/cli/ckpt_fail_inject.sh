#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Crashes checkpoint saves on purpose (MINI5D_CKPT_FAIL=after_write, =mid_write) and
# checks the previous checkpoint survives: `latest` still points to it, it loads with
# exact values and verifies; the next good save commits and clears the stale .tmp files.
# usage: ckpt_fail_inject.sh WORKDIR MPIEXEC NP_FLAG CKPT_TOOL MINI5D_APP
set -u
work=$1 mpiexec=$2 npflag=$3 tool=$4 app=$5
run() { "$mpiexec" "$npflag" 2 "$@"; }
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
ck=ck

run "$tool" write $ck step-00000001 1 11 0 || fail "first save"
for point in after_write mid_write; do
  MINI5D_CKPT_FAIL=$point run "$tool" write $ck step-00000002 2 22 0 > out.txt 2>&1 \
    && fail "$point: the save did not abort"
  grep -q "MINI5D_CKPT_FAIL: aborting the checkpoint save" out.txt || { cat out.txt; fail "$point: no abort message"; }
  [[ $(cat $ck/latest) == step-00000001.h5 ]] || fail "$point: latest is now $(cat $ck/latest)"
  [[ ! -e $ck/step-00000002.h5 ]] || fail "$point: the crashed save has a final name"
  [[ -e $ck/step-00000002.h5.tmp ]] || fail "$point: no temporary file left (did it write at all?)"
  run "$tool" check $ck 1 11 || fail "$point: previous checkpoint does not load exactly"
  "$app" ckpt verify $ck || fail "$point: previous checkpoint does not verify"
  echo "ok: $point crash left step 1 intact"
done
run "$tool" write $ck step-00000003 3 33 0 || fail "save after the crashes"
[[ $(cat $ck/latest) == step-00000003.h5 ]] || fail "latest not updated"
ls $ck/*.tmp 2>/dev/null && fail "stale temporaries not cleaned"
run "$tool" check $ck 3 33 || fail "new checkpoint"
run "$tool" check $ck/step-00000001.h5 1 11 || fail "old checkpoint (keep all)"
echo "ok: crash-safe saves"
