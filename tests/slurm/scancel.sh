#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A job killed with scancel leaves the last committed checkpoint intact and
# the next submission resumes from it. The jobs save every 50 steps.
#  1. plain scancel (SIGTERM, SIGKILL after KillWait): mini5d saves at the next step
#     boundary; `latest` names that step and `mini5d ckpt verify` accepts it.
#  2. the resubmitted script resumes from it; its ranks are then killed with SIGKILL
#     mid-run, as by the OOM killer or a failing node, with no chance to save (Slurm
#     itself never sends a bare SIGKILL: scancel --signal=KILL on a step is SIGTERM
#     first, then SIGKILL after KillWait). `latest` must still name the last periodic
#     checkpoint (a multiple of 50 past the first), intact.
#  3. a third submission resumes from that one and finishes.
# Every start's losses equal an uninterrupted run's.
# usage: scancel.sh WORKDIR PLAN APP MPIEXEC NPFLAG INPUTS
set -u
source "$(dirname "$0")/common.sh"
setup_test "$@"
steps=1000
args=(train.steps=$steps output.log_every=1 checkpoint.every=50)
latest_step() { sed -n 's/^step-0*\([0-9]*\)\.h5$/\1/p' <(head -n 1 checkpoints/latest 2>/dev/null); }
verify() {
  "$APP" ckpt verify checkpoints > verify.out 2>&1 || { cat verify.out; fail "$1: mini5d ckpt verify checkpoints"; }
}

LOGS+=(job1.out job2.out job3.out)
job1=$(submit -o job1.out plan.sh "${args[@]}")
wait_step job1.out 120 60
scancel "$job1" || fail "scancel $job1"
wait_state "$job1" CANCELLED 60
saved1=$(latest_step)
[[ -n $saved1 ]] && ((saved1 >= 120)) || fail "after scancel: latest names '$(head -n 1 checkpoints/latest)', expected step >= 120"
verify "after scancel"

job2=$(submit -o job2.out plan.sh "${args[@]}")
wait_step job2.out $((saved1 + 80)) 60
# The job's mini5d processes: those whose environment carries its SLURM_JOB_ID.
ranks=()
for p in $(pgrep -x mini5d); do
  tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx "SLURM_JOB_ID=$job2" && ranks+=("$p")
done
((${#ranks[@]} == 2)) || fail "found ${#ranks[@]} mini5d processes of job $job2, expected 2"
kill -KILL "${ranks[@]}" || fail "kill -KILL ${ranks[*]}"
wait_state "$job2" "FAILED|CANCELLED" 60
saved2=$(latest_step)
[[ -n $saved2 ]] && ((saved2 > saved1 && saved2 % 50 == 0)) ||
  fail "after SIGKILL: latest names '$(head -n 1 checkpoints/latest)', expected the last multiple of 50 after $saved1"
verify "after SIGKILL"
[[ -f mini5d-report-$job2-0.json ]] && fail "job $job2 wrote a report after SIGKILL?"

job3=$(submit -o job3.out plan.sh "${args[@]}")
wait_state "$job3" COMPLETED 120
[[ $(field "$job3" ExitCode) == 0:0 ]] || fail "job $job3 exit code $(field "$job3" ExitCode)"
reference_run plan.yaml ref.json train.steps=$steps
# Job 1 (steps 1..saved1), job 2's report is gone with SIGKILL, job 3 from saved2 + 1.
python3 "$here/compare_runs.py" --gaps ref.json "mini5d-report-$job1-0.json" "mini5d-report-$job3-0.json" || exit 1
grep -q "\"kind\": \"load\", \"path\": \"checkpoints/step-$(printf %08d "$saved2").h5\"" "mini5d-report-$job3-0.json" ||
  fail "job $job3 did not resume from step $saved2"
wait_sacct "$job3" COMPLETED
echo "sacct:"$'\n'"$(sacct_lines "$job1")"$'\n'"$(sacct_lines "$job2")"$'\n'"$(sacct_lines "$job3")"
echo "ok: scancel kept step $saved1 (job $job1); SIGKILL kept step $saved2 (job $job2); job $job3 resumed and finished"
