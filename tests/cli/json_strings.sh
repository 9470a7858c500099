#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Every deck string field with a TAB, a newline, quotes, a backslash,
# a control byte and non-ASCII text comes back exactly from the JSON report, which
# python3 -m json.tool accepts.
# usage: json_strings.sh WORKDIR MINI5D_APP DECK
set -u
work=$1 app=$2 deck=$3
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
odd=$'tab\there "quoted" back\\slash\nnewline \x01 \x7f caf\xc3\xa9'
ckdir=$'ck\tdir'
report=$'rep\tort.json'
"$app" train "$deck" train.steps=2 "data.path=$odd" "checkpoint.dir=$ckdir" "output.report=$report" > run.out 2>&1 ||
  { echo "FAIL: run"; cat run.out; exit 1; }
python3 -m json.tool "$report" > /dev/null || { echo "FAIL: json.tool rejects the report"; exit 1; }
ODD="$odd" CKDIR="$ckdir" REPORT="$report" python3 - <<'PY' || exit 1
import json, os
r = json.load(open(os.environ["REPORT"], encoding="utf-8"))
want = {("data", "path"): os.environ["ODD"], ("checkpoint", "dir"): os.environ["CKDIR"],
        ("output", "report"): os.environ["REPORT"], ("checkpoint", "resume"): ""}
for (sec, field), v in want.items():
    assert r["deck"][sec][field] == v, (sec, field, r["deck"][sec][field], v)
print("ok: deck strings round-trip through the JSON report")
PY
