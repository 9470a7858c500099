#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# `sbatch -N 2` of the planner's script across the test hosts: the Slurm of
# scripts/start-slurm.sh --cluster runs tiny as t2 x d2 on 2 hosts x 2 ranks; the job
# ends COMPLETED 0:0, its header puts ranks 0-1 on the first host and 2-3 on the second
# (t inside, d across), and its losses equal the same deck run by mpiexec across the
# hosts outside Slurm (every step, bit for bit).
# usage: slurm_submit.sh WORKDIR PLAN APP INPUTS
set -u
source "$(dirname "$0")/slurm_common.sh"
setup_cluster_test "$@"
steps=50
cluster_reference plan.yaml ref.json train.steps=$steps output.log_every=10
LOGS+=(job.out)
job=$(submit -N 2 -o job.out plan.sh train.steps=$steps output.log_every=10)
wait_state "$job" COMPLETED 120
[[ $(field "$job" ExitCode) == 0:0 ]] || fail "job $job exit code $(field "$job" ExitCode)"
[[ $(field "$job" NumNodes) == 2 && $(field "$job" NumTasks) == 4 ]] ||
  fail "job $job ran $(field "$job" NumTasks) tasks on $(field "$job" NumNodes) nodes, the plan has 4 on 2"
on_both_hosts job.out
report=mini5d-report-$job-0.json
grep -q '"grid": "DP(2)-PP(1)-CP(1)-EP(1)-TP(2)' "$report" || fail "$report: not the planned t2 x d2 layout"
python3 "$here/compare_runs.py" ref.json "$report" || exit 1
echo "ok: job $job (planner script, sbatch -N 2) COMPLETED 0:0 on $(field "$job" NodeList), losses equal the mpiexec run"
