#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Asynchronous checkpoints (checkpoint.async=true) write the same data as blocking ones
# and resume exactly:
#  1. a blocking and an asynchronous run of 8 steps saving every 4: identical losses,
#     and every dataset of step 4 and of step 8 has the same checksum in both;
#  2. the asynchronous run reports each save's snapshot and background write (console
#     line and report fields), and waits for the last one at the end of the run;
#  3. a resume from the asynchronous step 4 trains steps 5-8 with losses identical to
#     the uninterrupted run's;
#  4. SIGTERM: the run saves in the background, waits for that save before it stops,
#     and reports the wait ("stop signal"); `latest` names it.
# usage: train_async_save.sh WORKDIR MPIEXEC NP_FLAG MINI5D_APP DECK
set -u
work=$1 mpiexec=$2 npflag=$3 app=$4 deck=$5
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
run() { "$mpiexec" "$npflag" 2 "$app" train "$deck" parallel.d=2 train.micro_batch=8 parallel.zero=1 \
        train.steps=8 output.log_every=1 "$@"; }
# The losses of a report, one per line (as the report writes them: exact round trip).
losses() { python3 -c 'import json,sys; [print(repr(s["loss"])) for s in json.load(open(sys.argv[1]))["steps"]]' "$1"; }
# Every dataset's name and stored checksum (h5dump -A: the attributes, no data), in the
# file's order; `ckpt verify` checks each against the data.
sums() {
  h5dump -A "$1" | awk '/^ *(GROUP|DATASET) "/ { name = $2 }
                        /ATTRIBUTE "checksum"/ { want = 1 }
                        want && /\(0\):/ { print name, $2; want = 0 }'
}
command -v h5dump > /dev/null || { echo "SKIP: h5dump (hdf5-tools) is not installed"; exit 77; }

run checkpoint.dir=ck_sync checkpoint.every=4 output.report=sync.json > sync.out 2>&1 || { cat sync.out; fail "blocking run"; }
run checkpoint.dir=ck_async checkpoint.every=4 checkpoint.async=true output.report=async.json > async.out 2>&1 ||
  { cat async.out; fail "asynchronous run"; }
losses sync.json > sync.loss && losses async.json > async.loss
[[ $(wc -l < sync.loss) -eq 8 ]] || fail "the blocking run reported $(wc -l < sync.loss) steps, not 8"
cmp -s sync.loss async.loss || { paste sync.loss async.loss; fail "asynchronous saves changed the losses"; }
for s in 4 8; do
  f=step-0000000$s.h5
  sums ck_sync/$f > sync.$s && sums ck_async/$f > async.$s || fail "ckpt info of step $s"
  [[ $(wc -l < sync.$s) -ge 10 ]] || { cat sync.$s; fail "ckpt info listed too few datasets"; }
  cmp -s sync.$s async.$s || { diff sync.$s async.$s; fail "step $s: the asynchronous save's checksums differ"; }
  "$app" ckpt verify ck_async/$f > verify.out 2>&1 || { cat verify.out; fail "step $s does not verify"; }
done
[[ $(head -1 ck_async/latest) == step-00000008.h5 ]] || fail "latest is $(head -1 ck_async/latest)"
grep -q "^checkpoint step-00000004: snapshot [0-9.]* s (blocking), written in [0-9.]* s in the background" async.out ||
  { cat async.out; fail "no snapshot line for step 4"; }
grep -q "^checkpoint step-00000008: .*waited [0-9.]* s for it (end of run)" async.out ||
  { cat async.out; fail "the end of the run did not report its wait for step 8"; }
python3 - async.json <<'PY' || fail "report fields"
import json, sys
saves = [c for c in json.load(open(sys.argv[1]))["checkpoints"] if c["kind"] == "save"]
assert [c["step"] for c in saves] == [4, 8], saves
for c in saves:
    assert c["async"] is True and c["snapshot_seconds"] >= 0 and c["seconds"] > 0 and c["bytes"] > 0, c
assert saves[1]["waited_at"] == "end of run" and saves[1]["wait_seconds"] >= 0, saves[1]
PY
grep -q '"async": true' sync.json && fail "a blocking save reports async fields"
run checkpoint.dir=ck_resume checkpoint.resume=$PWD/ck_async/step-00000004.h5 output.report=resumed.json > resumed.out 2>&1 ||
  { cat resumed.out; fail "resume from the asynchronous step 4"; }
losses resumed.json > resumed.loss
tail -n 4 sync.loss > tail.loss
cmp -s tail.loss resumed.loss || { paste tail.loss resumed.loss; fail "the resumed steps 5-8 differ from the uninterrupted run"; }
# The launcher itself in the background (not the run function's subshell): it forwards SIGTERM.
"$mpiexec" "$npflag" 2 "$app" train "$deck" parallel.d=2 train.micro_batch=8 parallel.zero=1 output.log_every=1 \
  checkpoint.dir=ck_signal checkpoint.async=true train.steps=100000 output.report=signal.json \
  > signal.out 2>&1 &
pid=$!
for _ in $(seq 1 300); do grep -q "^step 20/" signal.out 2>/dev/null && break; sleep 0.1; done
kill -TERM "$pid"
wait "$pid" || { cat signal.out; fail "the signalled run did not exit 0"; }
grep -q "^checkpoint step-[0-9]*: .*waited [0-9.]* s for it (stop signal)" signal.out ||
  { cat signal.out; fail "no reported wait for the save at the stop signal"; }
python3 - signal.json <<'PY' || fail "signal report"
import json, sys
r = json.load(open(sys.argv[1]))
last = [c for c in r["checkpoints"] if c["kind"] == "save"][-1]
assert r["stopped_by_signal"] == 15 and last["reason"] == "signal SIGTERM" and last["waited_at"] == "stop signal", last
PY
n=$(python3 -c 'import json; print([c for c in json.load(open("signal.json"))["checkpoints"]][-1]["step"])')
[[ $(head -1 ck_signal/latest) == $(printf 'step-%08d.h5' "$n") ]] || fail "latest is not the signal's save (step $n)"
echo "ok: asynchronous saves match blocking ones byte for byte and resume exactly"
