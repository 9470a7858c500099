#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A failed save keeps the run's record (docs/checkpoints.md): on a tmpfs with room for the
# step-4 checkpoint only, the step-8 save fails; the 8 steps that trained still get the
# closing summary, the FOM line with valid=0 and the JSON report (written elsewhere),
# whose "halted" gives the reason; the status is 1 with one error line. At -n 2, and
# at -n 1 with a write failing in the first save, after step 4 (MINI5D_CKPT_FAIL=write_error).
# Skips (77) where no tmpfs can be mounted.
# usage: save_fails_report.sh WORKDIR MPIEXEC NP_FLAG MINI5D_APP DECK
set -u
source "$(dirname "$0")/lib.sh"
save_test_setup "$0" "$@"
# kept_record NAME WHY STEPS: status 1, one error line with WHY, the FOM line invalid,
# the report of STEPS steps halted for WHY.
kept_record() {
  [[ $status -eq 1 ]] || fail "$1: exit status $status, expected 1 (137: it hung)"
  [[ $(wc -l < run.err) -eq 1 ]] && grep -q "^mini5d: error: .*$2" run.err || fail "$1: not one error line with the reason"
  grep -q '^FOM mini5d tokens_per_s=.* valid=0$' run.out || fail "$1: no FOM line with valid=0"
  [[ -s report.json ]] || fail "$1: no report"
  python3 - "$2" "$3" <<'PY' || fail "$1: the report does not hold the $3 steps and the reason"
import json, re, sys
r = json.load(open("report.json"))
assert r["halted"] and re.search(sys.argv[1], r["halted"]), r["halted"]
assert len(r["steps"]) == int(sys.argv[2]), len(r["steps"])
PY
  echo "ok: $1: summary, FOM valid=0 and the report of $3 steps, halted: $2"
}
mkdir -p full
mount -t tmpfs -o size=1600k tmpfs full 2>/dev/null || { echo "SKIP: cannot mount a tmpfs here"; exit 77; }
run 2 train.steps=12 checkpoint.dir=full/ck output.report=report.json
status=$?
kept_record "-n 2 full disk" "No space left on device" 8
umount full
rm -f report.json
MINI5D_CKPT_FAIL=write_error run 1 train.steps=12 checkpoint.dir=ck output.report=report.json
status=$?
kept_record "-n 1 write error" "MINI5D_CKPT_FAIL=write_error" 4
