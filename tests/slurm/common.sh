# SPDX-License-Identifier: BSD-3-Clause
# Shared by the `slurm` tests (sourced): reach the test Slurm of scripts/start-slurm.sh,
# submit, and wait for job states with a deadline, so a test fails with a reason
# instead of hanging. Every failure prints one "FAIL: ..." line first.
: "${MINI5D_SLURM_DIR:=/tmp/mini5d-slurm}"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)  # this folder: compare_runs.py and the like
export SLURM_CONF=$MINI5D_SLURM_DIR/slurm.conf
JOBS=()  # submitted here; cancelled on exit if still alive
LOGS=()  # job output files: their last lines are printed when a test fails

fail() {
  echo "FAIL: $*"
  for j in "${JOBS[@]}"; do scontrol show job "$j" 2>/dev/null | head -n 4; done
  for f in "${LOGS[@]}"; do [[ -f $f ]] && { echo "--- last lines of $f:"; tail -n 25 "$f"; }; done
  exit 1
}
cleanup_jobs() { for j in "${JOBS[@]}"; do scancel "$j" 2>/dev/null; done; }
trap cleanup_jobs EXIT

# Slurm must be up (scripts/start-slurm.sh); if it failed to start, say why.
require_slurm() {
  local status
  status=$(cat "$MINI5D_SLURM_DIR/status" 2>/dev/null) ||
    fail "no test Slurm ($MINI5D_SLURM_DIR/status missing): ctest starts it (slurm_start), or run scripts/start-slurm.sh"
  [[ $status == up ]] || fail "the test Slurm did not start: $status"
  local state
  state=$(timeout 10 sinfo -h -o %T 2>&1 | head -n 1)
  # planned: idle, but held by the backfill scheduler for a job that was pending (22.05).
  [[ $state == idle || $state == mixed || $state == allocated || $state == planned ]] ||
    fail "sinfo: node state '$state' (daemon log: $(grep -hiE 'error|fatal' "$MINI5D_SLURM_DIR"/slurm*.log | tail -n 1))"
}

# submit ARGS...: sbatch --parsable; prints the job id.
submit() {
  local id
  id=$(sbatch --parsable "$@" 2>&1) || fail "sbatch $*: $id"
  [[ $id =~ ^[0-9]+$ ]] || fail "sbatch $*: unexpected answer '$id'"
  JOBS+=("$id")
  echo "$id"
}

# field JOB NAME: one field of `scontrol show job` (e.g. JobState, ExitCode, Restarts).
field() { scontrol -o show job "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1; }

# wait_state JOB REGEX SECONDS: until JobState matches; a terminal state that does
# not match, or the deadline, fails the test.
wait_state() {
  local job=$1 want=$2 limit=$3 s t0=$SECONDS
  while ((SECONDS - t0 < limit)); do
    s=$(field "$job" JobState)
    [[ $s =~ ^($want)$ ]] && return 0
    [[ $s =~ ^(COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|BOOT_FAIL|DEADLINE)$ ]] &&
      fail "job $job ended $s (exit $(field "$job" ExitCode)), expected $want"
    sleep 0.2
  done
  fail "job $job still ${s:-unknown} after ${limit}s (expected $want)"
}

# wait_step FILE STEP SECONDS: until the run's log shows training at STEP or later
# ("step N ..." lines with output.log_every=1).
wait_step() {
  local file=$1 step=$2 limit=$3 t0=$SECONDS last
  while ((SECONDS - t0 < limit)); do
    last=$(grep -oE '^step +[0-9]+' "$file" 2>/dev/null | tail -n 1 | grep -oE '[0-9]+')
    [[ -n $last ]] && ((last >= step)) && return 0
    sleep 0.05
  done
  fail "$file: no step $step after ${limit}s (last: ${last:-none})"
}

# sacct_lines JOB: the job's lines from the completion log (no slurmdbd here), one per
# start (a requeued start shows as PENDING).
sacct_lines() { sacct --completion -j "$1" -o JobID,JobName%14,State,ExitCode,Start,End -n 2>&1; }
# wait_sacct JOB STATE: until the completion log has the job's STATE line (slurmctld
# writes it just after scontrol shows the state); 10 s at most.
wait_sacct() {
  local t0=$SECONDS
  until grep -qE "^$1 .* $2 " <<<"$(sacct_lines "$1")"; do
    ((SECONDS - t0 < 10)) || fail "sacct: no $2 line for job $1:"$'\n'"$(sacct_lines "$1")"
    sleep 0.2
  done
}
# reference_run DECK REPORT ARGS... trains the emitted deck
# uninterrupted on 2 ranks with mpiexec (outside Slurm), with the environment the
# emitted script sets, into REPORT.
reference_run() {
  local deck=$1 report=$2
  shift 2
  rm -rf ref-ck
  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MINI5D_NO_BIND=0 timeout 120 \
    "$MPIEXEC" "$NPFLAG" 2 "$APP" train "$deck" parallel.ranks_per_node=2 checkpoint.dir=ref-ck \
    output.report="$report" "$@" > ref.out 2>&1 || { tail -n 5 ref.out; fail "the reference run failed"; }
}

# setup_test WORKDIR PLAN APP MPIEXEC NPFLAG INPUTS: a fresh work directory holding the
# planner's deck (plan.yaml) and sbatch script (plan.sh) for tiny on cpu-2core.
setup_test() {
  WORK=$1 PLAN=$2 APP=$3 MPIEXEC=$4 NPFLAG=$5 INPUTS=$6
  export MINI5D=$APP  # the emitted script starts $MINI5D
  rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK" || fail "cannot make $WORK"
  require_slurm
  "$PLAN" --model "$INPUTS/tiny.yaml" --cluster "$INPUTS/clusters/cpu-2core.yaml" --global-batch 16 \
    --emit-deck plan.yaml --emit-slurm plan.sh > plan.out 2>&1 || { cat plan.out; fail "mini5d-plan failed"; }
}

# usr1_requeue_resume JOB LOG SECONDS: at step 60 of LOG, SIGUSR1 to the job's steps (as
# Slurm sends before the time limit); the script must requeue it, and the requeued job,
# released from Slurm's 2-minute hold 2 s later (not at once: slurmd revokes the first
# start's credential when the requeue kills it, and a credential issued in the same
# second is refused too), must finish within SECONDS. Checks both starts' reports: the
# first stopped by SIGUSR1 with a checkpoint, the second finished.
usr1_requeue_resume() {
  local job=$1 log=$2 limit=$3 t0
  wait_step "$log" 60 90
  scancel --signal=USR1 "$job" || fail "scancel --signal=USR1 $job"
  t0=$SECONDS
  until [[ $(field "$job" Restarts) == 1 && $(field "$job" JobState) == PENDING ]]; do
    [[ $(field "$job" JobState) == COMPLETED ]] && fail "job $job completed without a requeue (signal too late?)"
    ((SECONDS - t0 < 60)) || fail "job $job not requeued after 60 s: $(field "$job" JobState)"
    sleep 0.2
  done
  scontrol update JobId="$job" StartTime=now+2 || fail "scontrol update StartTime=now+2"
  wait_state "$job" COMPLETED "$limit"
  [[ $(field "$job" ExitCode) == 0:0 ]] || fail "job $job exit code $(field "$job" ExitCode)"
  local first=mini5d-report-$job-0.json second=mini5d-report-$job-1.json
  grep -q '"stopped_by_signal": 10,' "$first" || fail "$first: the first start was not stopped by SIGUSR1"
  grep -q '"reason": "signal SIGUSR1"' "$first" || fail "$first: no checkpoint saved on SIGUSR1"
  grep -q '"stopped_by_signal": 0,' "$second" || fail "$second: the second start did not finish"
}
