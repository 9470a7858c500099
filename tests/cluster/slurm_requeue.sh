#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Signal -> checkpoint -> requeue -> resume across the test hosts: the planner's script
# (--signal=USR1@120, --requeue) submitted with sbatch -N 2 to the Slurm of
# scripts/start-slurm.sh --cluster; mid-run the test sends SIGUSR1 to the job's steps
# (as Slurm does before the time limit). mini5d saves at the next step boundary on the
# shared file system and exits 0, the script requeues the job, and the second start
# resumes from `latest` on both hosts. Its losses, with the first start's, equal an
# uninterrupted run's at every step. As in the one-node test (tests/slurm/requeue.sh),
# the requeued job is released from Slurm's 2-minute hold 2 s after the requeue.
# usage: slurm_requeue.sh WORKDIR PLAN APP INPUTS
set -u
source "$(dirname "$0")/slurm_common.sh"
setup_cluster_test "$@"
steps=200
cluster_reference plan.yaml ref.json train.steps=$steps output.log_every=1
LOGS+=(job.out)
job=$(submit -N 2 -o job.out plan.sh train.steps=$steps output.log_every=1)
wait_step job.out 60 90
scancel --signal=USR1 "$job" || fail "scancel --signal=USR1 $job"
t0=$SECONDS
until [[ $(field "$job" Restarts) == 1 && $(field "$job" JobState) == PENDING ]]; do
  [[ $(field "$job" JobState) == COMPLETED ]] && fail "job $job completed without a requeue (signal too late?)"
  ((SECONDS - t0 < 60)) || fail "job $job not requeued after 60 s: $(field "$job" JobState)"
  sleep 0.2
done
scontrol update JobId="$job" StartTime=now+2 || fail "scontrol update StartTime=now+2"
wait_state "$job" COMPLETED 180
[[ $(field "$job" ExitCode) == 0:0 ]] || fail "job $job exit code $(field "$job" ExitCode)"
first=mini5d-report-$job-0.json second=mini5d-report-$job-1.json
grep -q '"stopped_by_signal": 10,' "$first" || fail "$first: the first start was not stopped by SIGUSR1"
grep -q '"reason": "signal SIGUSR1"' "$first" || fail "$first: no checkpoint saved on SIGUSR1"
grep -q '"stopped_by_signal": 0,' "$second" || fail "$second: the second start did not finish"
on_both_hosts job.out
python3 "$here/compare_runs.py" ref.json "$first" "$second" || exit 1
echo "ok: job $job across $(field "$job" NodeList): SIGUSR1 -> checkpoint -> requeue -> resume, losses equal"
