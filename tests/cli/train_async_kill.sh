#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# kill -9 of a job whose asynchronous save is half-way through its file: `latest` stays
# on the previous checkpoint, which verifies, and a resume from it trains the remaining
# steps with losses identical to an uninterrupted run's. Then the watchdog: a rank whose
# writer hangs mid-file (MINI5D_CKPT_FAIL=stall_write) ends the job once the background
# save has made no progress for parallel.collective_timeout_s, while training went on.
# The writer is held mid-file with MINI5D_CKPT_FAIL=pause_mid_write (it waits, up to
# 30 s, for its marker file to go) while the training thread goes on; every rank and
# the launcher are killed once the marker exists.
# usage: train_async_kill.sh WORKDIR MPIEXEC NP_FLAG MINI5D_APP DECK
set -u
work=$1 mpiexec=$2 npflag=$3 app=$4 deck=$5
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
run() { "$mpiexec" "$npflag" 2 "$app" train "$deck" parallel.d=2 train.micro_batch=8 parallel.zero=2 \
        train.steps=8 output.log_every=1 checkpoint.dir=ck checkpoint.async=true "$@"; }
losses() { python3 -c 'import json,sys; [print(repr(s["loss"])) for s in json.load(open(sys.argv[1]))["steps"]]' "$1"; }

run checkpoint.dir=ck_whole output.report=whole.json > whole.out 2>&1 || { cat whole.out; fail "uninterrupted run"; }
run train.steps=4 checkpoint.at_end=true output.report= > first.out 2>&1 || { cat first.out; fail "first run"; }
[[ $(head -1 ck/latest) == step-00000004.h5 ]] || fail "the first run left latest at $(head -1 ck/latest)"
mkdir pids
MINI5D_CKPT_FAIL=pause_mid_write MINI5D_PID_DIR=$PWD/pids run checkpoint.resume=latest checkpoint.every=2 \
  output.report= > killed.out 2>&1 &
pid=$!
marker=ck/step-00000006.h5.tmp.paused
for _ in $(seq 1 600); do [[ -e $marker ]] && break; sleep 0.05; done
[[ -e $marker ]] || { kill -KILL "$pid"; cat killed.out; fail "the save of step 6 never reached the middle of its file"; }
[[ -e ck/step-00000006.h5.tmp ]] || { kill -KILL "$pid"; fail "no temporary file while the writer is paused"; }
kill -KILL "$(cat pids/rank-0.pid)" "$(cat pids/rank-1.pid)" "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
grep -q "^checkpoint saved: ck/step-00000006.h5" killed.out && fail "the killed save was reported as saved"
[[ $(head -1 ck/latest) == step-00000004.h5 ]] || fail "latest moved to $(head -1 ck/latest) before the commit"
[[ ! -e ck/step-00000006.h5 ]] || fail "the killed save has its final name"
"$app" ckpt verify ck > verify.out 2>&1 || { cat verify.out; fail "latest does not verify after the kill"; }
run checkpoint.resume=latest output.report=resumed.json > resumed.out 2>&1 || { cat resumed.out; fail "resume after the kill"; }
grep -q "^resumed from ck/step-00000004.h5" resumed.out || { cat resumed.out; fail "did not resume from step 4"; }
losses whole.json | tail -n 4 > whole.loss && losses resumed.json > resumed.loss
[[ $(wc -l < resumed.loss) -eq 4 ]] || fail "the resume reported $(wc -l < resumed.loss) steps, not 4"
cmp -s whole.loss resumed.loss || { paste whole.loss resumed.loss; fail "steps 5-8 after the kill differ from the uninterrupted run"; }
echo "ok: kill -9 mid-write kept latest at step 4 and the resume is bit-exact"
MINI5D_CKPT_FAIL=stall_write run checkpoint.dir=ck_stall checkpoint.every=4 parallel.collective_timeout_s=3 \
  output.report= > stall.out 2>&1 && { cat stall.out; fail "a hung background writer did not end the job"; }
grep -q "fatal: step 8: the background checkpoint save has made no progress for 3 s" stall.out ||
  { cat stall.out; fail "no watchdog line for the hung background writer"; }
grep -q "^step 8/8" stall.out || { cat stall.out; fail "training did not go on while the writer hung"; }
[[ ! -e ck_stall/step-00000004.h5 && ! -e ck_stall/latest ]] || fail "the hung save was committed"
echo "ok: the watchdog ended the job whose background writer hung"
