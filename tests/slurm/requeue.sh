#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Signal -> checkpoint -> requeue -> resume. The planner's script is submitted
# (it carries --signal=USR1@120 and --requeue); mid-run the test sends SIGUSR1 to the
# job's steps, as Slurm does before the time limit (scancel --signal=USR1). mini5d
# saves at the next step boundary and exits 0, the script requeues the job, and the
# second start resumes from `latest`. Its losses, with the first start's, equal an
# uninterrupted run's at every step. Slurm holds a requeued job back for 2 minutes
# (BeginTime); the test releases it 2 s after the requeue instead. Not at once: slurmd
# revokes the first start's job credential when the requeue kills it, and a credential
# issued in the same second as that revocation is refused too (slurmctld logs "Killing
# non-startable batch JobId=N: Job credential revoked" and the job ends FAILED, exit 1).
# usage: requeue.sh WORKDIR PLAN APP MPIEXEC NPFLAG INPUTS
set -u
source "$(dirname "$0")/common.sh"
setup_test "$@"
steps=1000
LOGS+=(job.out)
job=$(submit -o job.out plan.sh train.steps=$steps output.log_every=1)
usr1_requeue_resume "$job" job.out 120
first=mini5d-report-$job-0.json second=mini5d-report-$job-1.json
reference_run plan.yaml ref.json train.steps=$steps
python3 "$here/compare_runs.py" ref.json "$first" "$second" || exit 1
# Two starts in the completion log: the requeued one, then the finished one.
wait_sacct "$job" COMPLETED
acct=$(sacct_lines "$job")
[[ $(awk '{print $3}' <<<"$acct" | tr '\n' ' ') == "PENDING COMPLETED " ]] ||
  fail "sacct: expected a requeued start then a completed one for $job:"$'\n'"$acct"
echo "sacct:"$'\n'"$acct"
echo "ok: job $job: SIGUSR1 -> checkpoint -> requeue -> resume, losses equal"
