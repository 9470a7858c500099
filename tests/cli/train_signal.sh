#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# SIGTERM during training (what Slurm sends before the time limit with --signal):
# the run finishes its step, saves a checkpoint there, exits 0; the checkpoint verifies
# and a resume from it runs to the end with exactly the losses of an uninterrupted run
# (resuming at another layout is tested by test_resume).
# usage: train_signal.sh WORKDIR MPIEXEC NP_FLAG MINI5D_APP DECK
set -u
work=$1 mpiexec=$2 npflag=$3 app=$4 deck=$5
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
common=(parallel.d=2 train.micro_batch=8 parallel.zero=1 checkpoint.dir=ck output.report= output.log_every=1)
steps=200  # long enough that the signal lands well before the end
"$mpiexec" "$npflag" 2 "$app" train "$deck" train.steps=$steps "${common[@]}" > run.out 2>&1 &
pid=$!
# Wait for training to be under way, then signal the launcher (it forwards SIGTERM).
for _ in $(seq 1 300); do grep -q "^step 3/" run.out 2>/dev/null && break; sleep 0.1; done
kill -TERM "$pid"
wait "$pid"; status=$?
[[ $status -eq 0 ]] || { echo "FAIL: exit status $status after SIGTERM"; cat run.out; exit 1; }
line=$(grep "^stopped by signal 15 at step " run.out) || { echo "FAIL: no 'stopped by signal' line"; cat run.out; exit 1; }
step=$(sed 's/.* at step \([0-9]*\) .*/\1/' <<<"$line")
file=$(printf 'ck/step-%08d.h5' "$step")
[[ -f $file ]] || { echo "FAIL: no checkpoint $file"; ls ck; exit 1; }
[[ $(head -1 ck/latest) == "$(basename "$file")" ]] || { echo "FAIL: latest is $(head -1 ck/latest), expected $(basename "$file")"; exit 1; }
last=$(grep "^step " run.out | tail -1 | sed 's/^step \([0-9]*\)\/.*/\1/')
[[ $last -eq $step ]] || { echo "FAIL: last step printed $last, checkpoint at $step"; exit 1; }
"$app" ckpt verify ck > verify.out 2>&1 || { echo "FAIL: verify"; cat verify.out; exit 1; }
(( step < steps )) || { echo "FAIL: the run ended (step $step) before the signal"; exit 1; }
# Resume to the end, and the same run uninterrupted: resume is exact, so every step's
# loss (the interrupted run's, then the resumed run's) equals the uninterrupted run's.
"$mpiexec" "$npflag" 2 "$app" train "$deck" train.steps=$steps "${common[@]}" resume=latest \
  > resume.out 2>&1 || { echo "FAIL: resume"; cat resume.out; exit 1; }
grep -q "^resumed from ck/step-" resume.out && grep -q "^step $steps/" resume.out ||
  { echo "FAIL: resume output"; cat resume.out; exit 1; }
"$mpiexec" "$npflag" 2 "$app" train "$deck" train.steps=$steps "${common[@]}" checkpoint.dir=ck_ref \
  > ref.out 2>&1 || { echo "FAIL: uninterrupted run"; cat ref.out; exit 1; }
python3 - "$steps" <<'PY' || exit 1
import re, sys
steps = int(sys.argv[1])
def losses(path):
    return {int(m.group(1)): m.group(2) for m in
            (re.match(r"^step (\d+)/\d+\s+loss (\S+)", l) for l in open(path)) if m}
ref, got = losses("ref.out"), {**losses("run.out"), **losses("resume.out")}
assert sorted(ref) == list(range(1, steps + 1)), "reference incomplete"
assert sorted(got) == list(range(1, steps + 1)), ("steps missing", sorted(set(ref) - set(got))[:5])
bad = [s for s in ref if got[s] != ref[s]]
assert not bad, f"losses differ from the uninterrupted run at steps {bad[:5]}: {got[bad[0]]} vs {ref[bad[0]]}"
print(f"all {steps} losses of the interrupted + resumed run equal the uninterrupted run's")
PY
echo "ok: SIGTERM at step $step saved, verified and resumed with the uninterrupted run's losses"
