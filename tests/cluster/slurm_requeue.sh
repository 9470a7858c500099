#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Signal -> checkpoint -> requeue -> resume across the test hosts: the planner's script
# (--signal=USR1@120, --requeue) submitted with sbatch -N 2 to the Slurm of
# scripts/start-slurm.sh --cluster, as d2 with one rank per host (--ntasks-per-node=1,
# parallel.t=1: the same global batch; 4 ranks on the machine's 2 cores make every
# checkpoint save and load take seconds, docs/two-tier-cluster.md); mid-run the test
# sends SIGUSR1 to the job's steps
# (as Slurm does before the time limit). mini5d saves at the next step boundary on the
# shared file system and exits 0, the script requeues the job, and the second start
# resumes from `latest` on both hosts. Its losses, with the first start's, equal an
# uninterrupted run's at every step. As in the one-node test (tests/slurm/requeue.sh),
# the requeued job is released from Slurm's 2-minute hold 2 s after the requeue.
# usage: slurm_requeue.sh WORKDIR PLAN APP INPUTS
set -u
source "$(dirname "$0")/slurm_common.sh"
setup_cluster_test "$@"
steps=200 d2=(parallel.t=1 output.log_every=1)
PPN=1 cluster_reference plan.yaml ref.json train.steps=$steps "${d2[@]}"
LOGS+=(job.out)
job=$(submit -N 2 --ntasks-per-node=1 -o job.out plan.sh train.steps=$steps "${d2[@]}")
usr1_requeue_resume "$job" job.out 180
first=mini5d-report-$job-0.json second=mini5d-report-$job-1.json
grep -q "rank 0 (node 0, ${HOSTS[0]})" job.out && grep -q "rank 1 (node 1, ${HOSTS[1]})" job.out ||
  fail "job.out: ranks 0 and 1 not on ${HOSTS[0]} and ${HOSTS[1]}"
grep -qE '^  d +data +2 +1 +inter-node' job.out || fail "job.out: d does not cross the hosts"
python3 "$here/compare_runs.py" ref.json "$first" "$second" || exit 1
grep -m1 '^restart:' job.out || fail "job.out: the second start printed no restart line"
echo "ok: job $job across $(field "$job" NodeList): SIGUSR1 -> checkpoint -> requeue -> resume, losses equal"
