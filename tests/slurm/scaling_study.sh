#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# perf/scaling_study.py end to end on the test Slurm: `write` plans tiny on the 2-core
# box for weak and strong scaling (1 node: the one node this Slurm has), `submit` sends
# both jobs, each with its own checkpoint directory, and `collect` reads their reports:
# both COMPLETED 0:0, each row's tokens/s is its report's FOM, valid, efficiency 100% at
# the base point, and the planner's prediction beside it. (The efficiency arithmetic over
# several node counts is checked by scaling_study_collect.)
# usage: scaling_study.sh WORKDIR PLAN APP MPIEXEC NPFLAG INPUTS
set -u
source "$(dirname "$0")/common.sh"
WORK=$1 PLAN=$2 APP=$3 INPUTS=$6
export MINI5D=$APP
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK" || fail "cannot make $WORK"
require_slurm
study=$here/../../perf/scaling_study.py
python3 "$study" write --model "$INPUTS/tiny.yaml" --cluster "$INPUTS/clusters/cpu-2core.yaml" --nodes 1 \
  --global-batch 8 --out study --plan "$PLAN" > write.out 2>&1 || { cat write.out; fail "scaling_study write"; }
python3 "$study" submit study --steps 30 output.log_every=10 > submit.out 2>&1 || { cat submit.out; fail "scaling_study submit"; }
for name in weak-1n strong-1n; do
  job=$(python3 -c "import json; print(json.load(open('study/jobs.json'))['$name'])")
  JOBS+=("$job")
  LOGS+=("study/slurm-$job.out")
  wait_state "$job" COMPLETED 120
  [[ $(field "$job" ExitCode) == 0:0 ]] || fail "$name: job $job exit code $(field "$job" ExitCode)"
  [[ -d study/ckpt-$name ]] || fail "$name: no checkpoint directory of its own (study/ckpt-$name)"
done
python3 "$study" collect study > collect.out 2>&1 || { cat collect.out; fail "scaling_study collect"; }
cat collect.out
python3 - <<'PY' || fail "the table does not carry the reports"
import csv, glob, json
rows = list(csv.DictReader(open("study/scaling.csv")))
assert len(rows) == 2, rows
for r in rows:
    rep = json.load(open(glob.glob(f"study/mini5d-report-{r['job']}-*.json")[0]))
    assert float(r["measured"]) == rep["fom"]["tokens_per_s"] > 0, (r, rep["fom"])
    assert r["valid"] == "True" and float(r["efficiency"]) == 1.0, r
    assert float(r["predicted_tokens_per_s"]) > 0 and float(r["vs_predicted"]) > 0, r
PY
echo "ok: scaling study written, submitted and collected on the test Slurm"
