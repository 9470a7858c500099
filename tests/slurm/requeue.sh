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
wait_step job.out 60 60
scancel --signal=USR1 "$job" || fail "scancel --signal=USR1 $job"
# Requeued: pending again with one restart; release it from the 2-minute hold.
t0=$SECONDS
until [[ $(field "$job" Restarts) == 1 && $(field "$job" JobState) == PENDING ]]; do
  [[ $(field "$job" JobState) == COMPLETED ]] && fail "job $job completed without a requeue (signal too late?)"
  ((SECONDS - t0 < 60)) || fail "job $job not requeued after 60 s: $(field "$job" JobState)"
  sleep 0.2
done
scontrol update JobId="$job" StartTime=now+2 || fail "scontrol update StartTime=now+2"
wait_state "$job" COMPLETED 120
[[ $(field "$job" ExitCode) == 0:0 ]] || fail "job $job exit code $(field "$job" ExitCode)"
first=mini5d-report-$job-0.json second=mini5d-report-$job-1.json
grep -q '"stopped_by_signal": 10,' "$first" || fail "$first: the first start was not stopped by SIGUSR1"
grep -q '"reason": "signal SIGUSR1"' "$first" || fail "$first: no checkpoint saved on SIGUSR1"
grep -q '"stopped_by_signal": 0,' "$second" || fail "$second: the second start did not finish"
reference_run plan.yaml ref.json train.steps=$steps
python3 "$here/compare_runs.py" ref.json "$first" "$second" || exit 1
# Two starts in the completion log: the requeued one, then the finished one.
wait_sacct "$job" COMPLETED
acct=$(sacct_lines "$job")
[[ $(awk '{print $3}' <<<"$acct" | tr '\n' ' ') == "PENDING COMPLETED " ]] ||
  fail "sacct: expected a requeued start then a completed one for $job:"$'\n'"$acct"
echo "sacct:"$'\n'"$acct"
echo "ok: job $job: SIGUSR1 -> checkpoint -> requeue -> resume, losses equal"
