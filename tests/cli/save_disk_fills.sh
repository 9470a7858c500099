#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A disk that fills up during a checkpoint save, at -n 1, 2 and 4. A small tmpfs (in a
# private mount namespace) has room for the save when it starts; half-way through the
# datasets every rank waits (MINI5D_CKPT_FAIL=pause_mid_write) while this script fills
# the rest of the tmpfs, then goes on.
#  1. With the save's reservation, the remaining writes land in room the file already
#     holds: the save completes, `latest` moves to it and it verifies.
#  2. With a reservation too small for the file (small_reserve), the writes fail: every
#     rank must end with status 1 and one line naming the temporary file, `latest` kept
#     on the previous checkpoint (which verifies), no .tmp left, no hang (the mpiexec runs
#     under timeout -s KILL: 137), no crash at exit (139).
#  3. At -n 2 and 4, a failure on the last rank just before the flush (flush_error), on
#     the full disk: the same clean end.
# Skips (77) where no tmpfs can be mounted.
# usage: save_disk_fills.sh WORKDIR MPIEXEC NP_FLAG MINI5D_APP DECK
set -u
source "$(dirname "$0")/lib.sh"
save_test_setup "$0" "$@"
# run_filling NP STEP FAILPOINTS OVERRIDES...: the save of step STEP pauses half-way, the
# tmpfs at $mnt is filled, the save goes on; sets status.
run_filling() {
  local np=$1 step=$2 points=$3; shift 3
  local marker=$mnt/ck/$(printf step-%08d $step).h5.tmp.paused
  MINI5D_CKPT_FAIL=$points run "$np" train.steps="$step" checkpoint.dir=$mnt/ck resume=latest "$@" &
  local pid=$!
  for _ in $(seq 600); do [[ -e $marker ]] && break; kill -0 $pid 2> /dev/null || break; sleep 0.1; done
  [[ -e $marker ]] || { kill -KILL $pid 2> /dev/null; wait $pid; fail "-n $np: the save did not pause"; }
  dd if=/dev/zero of=$mnt/fill bs=4k > /dev/null 2>&1  # until No space left on device
  [[ $(df --output=avail -B1 $mnt | tail -1) -lt 8192 ]] || fail "-n $np: the tmpfs did not fill up"
  rm -f "$marker"
  wait $pid
  status=$?
  rm -f $mnt/fill
}
check_latest() {  # DIR STEP: latest names step STEP, it verifies, no temporary is left
  local want=$(printf step-%08d.h5 $2)
  [[ $(head -1 "$1/latest") == $want ]] || fail "latest is $(head -1 "$1/latest"), expected $want"
  "$app" ckpt verify "$1" > verify.out 2>&1 || { cat verify.out; fail "latest does not verify"; }
  ! ls "$1"/*.tmp "$1"/*.paused > /dev/null 2>&1 || fail "temporary left behind: $(ls "$1"/*.tmp*)"
}
for np in 1 2 4; do
  mnt=fills$np
  mkdir -p $mnt
  # The tiny deck's checkpoint is 1.3 MB: room for two and a little.
  mount -t tmpfs -o size=4m tmpfs $mnt 2>/dev/null || { echo "SKIP: cannot mount a tmpfs here"; exit 77; }
  run $np train.steps=4 checkpoint.dir=$mnt/ck || fail "-n $np: the first save"
  run_filling $np 8 pause_mid_write
  [[ $status -eq 0 ]] || fail "-n $np: the disk filled during a reserved save: exit status $status, expected 0 (137: it hung)"
  check_latest $mnt/ck 8
  echo "ok: -n $np disk filled during the save: the reservation held, the save completed and verifies"
  run_filling $np 12 pause_mid_write,small_reserve
  [[ $status -eq 1 ]] || fail "-n $np: small reservation: exit status $status, expected 1 (137: it hung, 139: it crashed)"
  [[ $(wc -l < run.err) -eq 1 ]] && grep -q "^mini5d: error: $mnt/ck/step-00000012.h5.tmp: .*No space left on device" run.err ||
    fail "-n $np: small reservation: not one line naming the file and the OS error"
  check_latest $mnt/ck 8
  echo "ok: -n $np disk filled past a small reservation: one line, exit 1, latest kept, no temporary"
  if [[ $np -gt 1 ]]; then
    run_filling $np 12 pause_mid_write,flush_error
    [[ $status -eq 1 ]] || fail "-n $np: flush_error: exit status $status, expected 1 (137: it hung, 139: it crashed)"
    [[ $(wc -l < run.err) -eq 1 ]] &&
      grep -q "^mini5d: error: $mnt/ck/step-00000012.h5.tmp: flushing failed on rank $((np - 1)): MINI5D_CKPT_FAIL=flush_error" run.err ||
      fail "-n $np: flush_error: not one line naming the file and the rank"
    check_latest $mnt/ck 8
    echo "ok: -n $np a failure before the flush on a full disk: one line, exit 1, latest kept, no temporary"
  fi
  umount $mnt
done
