#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# `mini5d-plan --tune 3` writes the top 3 plans as decks (and their
# single-rank versions with --scale-down, which `mini5d check` accepts); with --run it
# trains each for a few steps and reports predicted against measured and the fastest
# measured plan; a launcher that cannot start anything gives each row its reason and
# exit status 4.
# No timing bound: how far measured lies from predicted depends on the machine's load
# (5.5 and 6.5 were seen on a busy 2-core box), so the table is checked for what does
# not: three rows, each with a positive predicted and measured step and a
# measured/predicted column that is their quotient (to the printed digits), and the
# "fastest measured" line naming the row with the least measured step. How close the
# calibrated planner comes is the calibration benchmark's (perf/bench_calibration.py,
# docs/benchmarks.md) and docs/planner.md's tuning table.
# usage: plan_tune.sh WORKDIR MPIEXEC MINI5D_APP MINI5D_PLAN TINY_DECK CLUSTER
set -u
work=$1 mpiexec=$2 app=$3 plan=$4 deck=$5 cluster=$6
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
"$plan" --model "$deck" --cluster "$cluster" --tune 3 --scale-down --tune-dir decks > emit.out 2>&1 ||
  fail "--tune without --run: $(cat emit.out)"
for i in 1 2 3; do
  [ -s decks/plan-$i.yaml ] || fail "no decks/plan-$i.yaml"
  "$app" check decks/plan-$i-scaled.yaml > check-$i.out 2>&1 || fail "scaled deck $i: $(cat check-$i.out)"
done
grep -q "^run them with: mpiexec -n " emit.out || fail "no run hint: $(cat emit.out)"
"$plan" --model "$deck" --cluster "$cluster" --tune 3 --run --tune-steps 12 --tune-dir runs --mini5d "$app" \
  --launcher "$mpiexec -n {ranks}" > run.out 2> run.err || fail "--tune --run: $(cat run.out run.err)"
python3 - <<'PY' || fail "tuning table: $(cat run.out)"
import re
# A printed time as (seconds, half a unit of its last digit): plan/output/format.cpp's ms().
HALF = {"ms": 0.05e-3, "us": 0.5e-6, "s": 0.005}
SCALE = {"ms": 1e-3, "us": 1e-6, "s": 1.0}
def secs(t):
    v, u = t.split()
    return float(v) * SCALE[u], HALF[u]
text = open("run.out").read()
rows = re.findall(r"^  ([123])\s+(d=\S+ t=\S+ .*?)\s+([0-9.]+ (?:ms|us|s))\s+([0-9.]+ (?:ms|us|s))\s+([0-9.]+)$", text, re.M)
assert len(rows) == 3, text
measured = {}
for pos, layout, pred, meas, ratio in rows:
    (p, hp), (m, hm), r = secs(pred), secs(meas), float(ratio)
    assert p > 0 and m > 0 and r > 0, (pos, pred, meas, ratio)
    assert (m - hm) / (p + hp) - 5e-4 <= r <= (m + hm) / max(p - hp, 1e-12) + 5e-4, (pos, pred, meas, ratio)
    measured[pos] = (m, hm)
f = re.search(r"^fastest measured: #([123]) \(", text, re.M)
assert f, text
m, hm = measured[f.group(1)]
assert all(m - hm <= other + h for other, h in measured.values()), (f.group(0), measured)
PY
for i in 1 2 3; do grep -q "^FOM mini5d tokens_per_s=" runs/plan-$i.log || fail "run $i: $(tail -3 runs/plan-$i.log)"; done
"$plan" --model "$deck" --cluster "$cluster" --tune 2 --run --tune-dir broken --launcher false > broken.out 2>&1
status=$?
[ $status -eq 4 ] || fail "a launcher that starts nothing: exit $status, not 4: $(cat broken.out)"
[ "$(grep -c 'did not run (exit' broken.out)" -eq 2 ] || fail "rows without their reason: $(cat broken.out)"
grep -q "^no plan ran: see the logs in broken/" broken.out || fail "no summary: $(cat broken.out)"
"$plan" --model "$deck" --cluster "$cluster" --run > norun.out 2>&1 && fail "--run without --tune accepted"
grep -q "mini5d-plan: --run needs --tune N" norun.out || fail "--run alone: $(cat norun.out)"
echo "ok: tuning decks written and checked, top 3 trained and ranked by measurement, failures reported"
