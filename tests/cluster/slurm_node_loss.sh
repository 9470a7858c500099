#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Losing a node: the planner's t2 x d2 script runs with sbatch -N 2 across the test hosts,
# saving every 40 steps; at step 50 the second host dies (its slurmd and every process
# in it killed); the reference run saves nothing. Slurm marks the node DOWN (SlurmdTimeout 10 s), ends the job step with
# "Node failure" and requeues the job, which cannot start on the one host left; the test
# cancels it and resubmits the script on the surviving host as t2 (d 2 -> 1, accumulation
# 1 -> 2: the same global batch). It resumes from `latest` (resharded) and its losses
# equal an uninterrupted t2 x d2 run's within 1e-5 relative. The lost host's slurmd is
# started again at the end, pass or fail. It prints the requeue time, from the host's
# death to the job running again (Slurm's detection, then the resubmission and start;
# the test's resubmission stands in for a requeue onto a spare node), and the resumed
# run's own restart line (start-up, load, first step).
# usage: slurm_node_loss.sh WORKDIR PLAN APP INPUTS
set -u
source "$(dirname "$0")/slurm_common.sh"
setup_cluster_test "$@"
steps=120 ck=(checkpoint.every=40 output.log_every=1)  # a save across the hosts takes ~5 s (docs/two-tier-cluster.md)
lost=${HOSTS[1]} kept=${HOSTS[0]}
revive() {  # the lost host's slurmd again, so the Slurm is whole for what follows
  if ! sinfo -h -n "$lost" -o %T | grep -q idle; then
    "$cluster_root/scripts/cluster-enter.sh" "$lost" slurmd -f "$SLURM_CONF" -N "$lost" \
      2>> "$MINI5D_SLURM_DIR/slurmd-$lost.log"
    for _ in $(seq 1 60); do sinfo -h -n "$lost" -o %T | grep -q idle && break; sleep 0.5; done
  fi
  cleanup_jobs
}
trap revive EXIT
cluster_reference plan.yaml ref.json train.steps=$steps output.log_every=1
LOGS+=(job.out job2.out)
job=$(submit -N 2 -o job.out plan.sh train.steps=$steps "${ck[@]}")
wait_step job.out 50 90
pids=$(ip netns pids "$lost" | tr '\n' ' ')
[[ -n ${pids// /} ]] || fail "no process in $lost to kill"
kill -KILL $pids
killed_at=$(date +%s.%N)
echo "killed $lost (slurmd, slurmstepd and the ranks: $pids) at $(grep -oE '^step +[0-9]+' job.out | tail -n 1)"
# Two endings, both with a line that says why: MPI reports the lost connection to the
# surviving ranks (mini5d's "MPI failed (...); ending the job" line, the job FAILED), or
# they wait in a collective until Slurm declares the node down (srun's "Node failure",
# the job requeued by --requeue, pending for 2 nodes).
t0=$SECONDS
until [[ $(field "$job" Restarts) == 1 ]] || [[ $(field "$job" JobState) =~ ^(NODE_FAIL|FAILED|CANCELLED|COMPLETED)$ ]]; do
  ((SECONDS - t0 < 90)) || fail "job $job still $(field "$job" JobState) 90 s after $lost died"
  sleep 0.5
done
ended_at=$(date +%s.%N)
echo "job $job after $((SECONDS - t0)) s: $(field "$job" JobState), restarts $(field "$job" Restarts); $lost $(sinfo -h -n "$lost" -o %T)"
[[ $(field "$job" JobState) != COMPLETED ]] || fail "job $job completed although $lost died"
why=$(grep -m1 -E "^mini5d: rank [0-9]+ on $kept: MPI failed .*; ending the job|Node failure on $lost" job.out) ||
  fail "job.out has no line saying why the job ended"
echo "the job's line: $why"
scancel "$job"
saved=$(grep -oE 'checkpoint saved: [^ ]*step-0*[0-9]+\.h5' job.out | tail -n 1 | grep -oE '[0-9]+\.h5$' | grep -oE '^[0-9]+' | sed 's/^0*//')
[[ -n $saved ]] || fail "the first start saved no checkpoint"
job2=$(submit -N 1 -w "$kept" --ntasks-per-node=2 -o job2.out plan.sh train.steps=$steps "${ck[@]}" \
  parallel.d=1 train.accumulation=2)
wait_state "$job2" COMPLETED 120
started_at=$(date -d "$(field "$job2" StartTime)" +%s) || fail "job $job2: no StartTime"
awk -v k="$killed_at" -v e="$ended_at" -v s="$started_at" 'BEGIN {
  printf "requeue: %.1f s from the host'"'"'s death to the job running again (Slurm ended the job after %.1f s, the next start %.1f s later; StartTime to the second)\n", s - k, e - k, s - e }'
grep -m1 '^restart:' job2.out || fail "job $job2 printed no restart line"
grep -q "resumed from checkpoints/step-0*$saved.h5" job2.out || fail "job $job2 did not resume from step $saved"
grep -q "parallel.d changed 2 -> 1" job2.out || fail "job $job2 did not reshard d 2 -> 1"
python3 "$here/../cluster/compare_resumed.py" ref.json "mini5d-report-$job2-0.json" $((saved + 1)) 1e-5 || exit 1
echo "ok: lost $lost at step 50; job $job ended by Slurm (node failure); job $job2 on $kept as t2 resumed at step $saved"
