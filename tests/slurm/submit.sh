#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The planner's deck and sbatch script for the 2-core "cluster", submitted
# to the test Slurm: the job trains on 2 ranks (d=2, ZeRO-2 as planned), ends COMPLETED
# with exit 0:0 in sacct and scontrol, and its JSON report has every step, with the
# losses of the same deck run by mpiexec outside Slurm.
# usage: submit.sh WORKDIR PLAN APP MPIEXEC NPFLAG INPUTS
set -u
source "$(dirname "$0")/common.sh"
setup_test "$@"
steps=200
LOGS+=(job.out)
job=$(submit -o job.out plan.sh train.steps=$steps output.log_every=50)
wait_state "$job" COMPLETED 120
[[ $(field "$job" ExitCode) == 0:0 ]] || fail "job $job exit code $(field "$job" ExitCode)"
[[ $(field "$job" NumTasks) == 2 ]] || fail "job $job ran $(field "$job" NumTasks) tasks, the plan has 2"
wait_sacct "$job" COMPLETED
acct=$(sacct_lines "$job")
grep -qE "^$job .* COMPLETED +0:0 " <<<"$acct" || fail "sacct: no COMPLETED 0:0 line for $job:"$'\n'"$acct"
report=mini5d-report-$job-0.json
grep -q '"grid": "DP(2)-PP(1)-CP(1)-EP(1)-TP(1)' "$report" || fail "$report: not the planned 2-rank layout"
grep -q '"zero": 2,' "$report" || fail "$report: not the planned ZeRO stage 2"
reference_run plan.yaml ref.json train.steps=$steps output.log_every=50
python3 "$here/compare_runs.py" ref.json "$report" || exit 1
echo "sacct: $acct"
echo "ok: job $job (planner script, 2 ranks) COMPLETED 0:0, report equal to the mpiexec run"
