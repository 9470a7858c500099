#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Two runs started in one directory with different checkpoint directories share the
# default report path. The second is refused at start-up (status 2, one line naming the
# report and the first run's pid), and the first run's report is the one written. Then
# a process that ignores the lock replaces the report while a run holds it: the run
# keeps that file and writes its own report beside it, named after its run, and says so.
# usage: report_two_runs.sh WORKDIR EXPECT_ERROR MINI5D_APP DECK
set -u
work=$1 expect=$2 app=$3 deck=$4
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
start_a() {  # CKPT_DIR: run A in the background until told to stop, default report path
  "$app" train "$deck" train.steps=100000 checkpoint.dir="$1" output.log_every=1 > a.out 2> a.err &
  pid=$!
  for _ in $(seq 1 300); do grep -q "^step 2/" a.out 2>/dev/null && break; sleep 0.1; done
  grep -q "^step 2/" a.out || { kill -KILL $pid; fail "run A did not start: $(cat a.out a.err)"; }
}
stop_a() {
  kill -USR1 $pid; wait $pid; local status=$?
  [[ $status -eq 0 ]] || fail "run A exit status $status: $(tail -3 a.out; cat a.err)"
}
run_id() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])' "$1"; }

start_a cka
"$expect" "mini5d-report.json: another mini5d run will write its report here (pid $pid on " \
  "$app" train "$deck" train.steps=2 checkpoint.dir=ckb
ok=$?
stop_a
[[ $ok -eq 0 ]] || fail "the second run was not refused"
[[ -d ckb ]] && ls ckb/*.h5 > /dev/null 2>&1 && fail "the refused run wrote checkpoints"
grep -q "^report written to mini5d-report.json$" a.out || fail "run A did not write its report: $(tail -2 a.out)"
[[ $(run_id mini5d-report.json) == $(sed -n 's/^run //p' cka/latest) ]] || fail "mini5d-report.json is not run A's"
echo "ok: a second run sharing the report path is refused; the first run's report is written"

start_a ckc
echo '{"written_by": "a process that ignores the lock"}' > mini5d-report.json
stop_a
id=$(sed -n 's/^run //p' ckc/latest)
grep -q "written_by" mini5d-report.json || fail "the other process's report was overwritten"
[[ -f mini5d-report.$id.json && $(run_id mini5d-report.$id.json) == "$id" ]] || fail "no report mini5d-report.$id.json"
grep -q "^report written to mini5d-report.$id.json$" a.out || fail "the run did not name where its report went"
[[ $(grep -c "mini5d: warning: mini5d-report.json was written by another process at .*this run's report goes to mini5d-report.$id.json" a.err) -eq 1 ]] ||
  fail "no one-line warning: $(cat a.err)"
echo "ok: a report replaced during the run is kept; the run's own goes to mini5d-report.$id.json"
