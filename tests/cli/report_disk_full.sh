#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The JSON report on a full disk. A small tmpfs (in a private mount
# namespace) holds a valid previous report and is then filled; the run must exit
# non-zero naming the path and "No space left on device", keep the previous report
# intact, and leave no temporary behind. Skips (77) where no tmpfs can be mounted.
# usage: report_disk_full.sh WORKDIR MINI5D_APP DECK
set -u
work=$1 app=$2 deck=$3
source "$(dirname "$0")/lib.sh"
if [[ ${MINI5D_IN_NS:-} != 1 ]]; then rm -rf "$work" && mkdir -p "$work/full" || exit 1; fi
in_mount_namespace "$0" "$@"
cd "$work" || exit 1
mount -t tmpfs -o size=256k tmpfs full 2>/dev/null || { echo "SKIP: cannot mount a tmpfs here"; exit 77; }
echo '{"previous": "report"}' > full/report.json
dd if=/dev/zero of=full/fill bs=4k > /dev/null 2>&1  # until the disk is full
"$app" train "$deck" train.steps=30 checkpoint.dir=ck output.report=full/report.json > run.out 2> run.err
status=$?
fail() { echo "FAIL: $*"; tail -5 run.out; cat run.err; exit 1; }
[[ $status -eq 1 ]] || fail "exit status $status, expected 1"
[[ $(grep -c "^mini5d: error: full/report.json: cannot write the report (output.report): writing full/report.json.tmp: No space left on device$" run.err) -eq 1 ]] ||
  fail "no single line naming the path and the OS error"
! grep -q "report written" run.out || fail "says report written"
[[ $(cat full/report.json) == '{"previous": "report"}' ]] || fail "the previous report changed: $(head -c 200 full/report.json)"
[[ ! -e full/report.json.tmp ]] || fail "temporary left behind"
echo "ok: full disk named, previous report intact, no temporary"
