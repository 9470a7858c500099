#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Goodput under failures, the short form: the planner's script for the test cluster (d2,
# one rank per host, the default deck's model) trains under the cluster's Slurm while
# tests/cluster/goodput_soak.py kills a host at random (host MTBF SOAK_MTBF_S, default
# 100 s, at most SOAK_KILLS kills, default 2) and brings it back; every
# start resumes from `latest`; the deck's collective watchdog (10 s) ends a job whose
# peer died sooner than Slurm notices the node. Checks that the job finishes, that every step's loss
# equals an uninterrupted run's (the same layout: 1e-6 relative covers the printed
# digits), and prints the measured ETTR beside the planner's prediction without asserting
# either (they are figures of time; the long form, perf/bench_goodput.py, compares them).
# SOAK_STEPS (600) and SOAK_EVERY (100) size the run, SOAK_SEED (21) draws the kills
# (with the default host MTBF: 9 s and 59 s after the first step, the second after the
# first restart has finished: at 64-90 ms a step on 2 cores, idle or busy, they land near
# steps 100-140 and 310-440, so 600 steps see both; 400 ended before the second on an
# idle machine),
# SOAK_DEADLINE_S (420) bounds the soak.
# usage: slurm_goodput.sh WORKDIR PLAN APP INPUTS [section.field=value ...]
set -u
soak_py=$(cd "$(dirname "$0")" && pwd)/goodput_soak.py
source "$(dirname "$0")/slurm_common.sh"
setup_cluster_test "$1" "$2" "$3" "$4"
shift 4
soak=(parallel.t=1 output.log_every=1 train.steps="${SOAK_STEPS:-600}" model.vocab=256 model.d_model=128
      model.layers=4 model.seq=64 model.ffn=512 train.micro_batch=8 checkpoint.every="${SOAK_EVERY:-100}"
      parallel.collective_timeout_s=10 "$@")
# SOAK_REFERENCE: the uninterrupted run's report from an earlier soak of the same deck
# (perf/bench_goodput.py reuses one across its points; losses do not depend on saves).
if [[ -n ${SOAK_REFERENCE:-} ]]; then
  cp "$SOAK_REFERENCE" ref.json || fail "no $SOAK_REFERENCE"
  export_finalize_preload
else
  PPN=1 cluster_reference plan.yaml ref.json "${soak[@]}" checkpoint.every=0 checkpoint.async=false
fi
LOGS+=(job.out)
python3 "$soak_py" --hosts "${HOSTS[@]}" --cluster-root "$cluster_root" --planner "$PLAN" \
  --reference ref.json --host-mtbf-s "${SOAK_MTBF_S:-100}" --max-kills "${SOAK_KILLS:-2}" --seed "${SOAK_SEED:-21}" \
  --tol 1e-6 --deadline-s "${SOAK_DEADLINE_S:-420}" --out soak.json "${soak[@]}" || fail "the soak failed"
python3 - <<'PY' || fail "soak.json: the soak's own checks"
import json
s = json.load(open("soak.json"))
assert s["kills"] >= 1, "no host was killed"
assert 1 <= s["restarts"] <= s["kills"], f"{s['kills']} kills but {s['restarts']} restarts"
# The ETTRs are figures of time, reported and not asserted (perf/bench_goodput.py compares them).
print(f"ok: {s['kills']} kills, {s['restarts']} restarts, {s['saves']} saves, {s['steps_lost']} steps run twice; "
      f"ETTR {s['ettr_measured']:.3f} measured, {s['ettr_predicted_realised_rate']:.3f} predicted")
PY
