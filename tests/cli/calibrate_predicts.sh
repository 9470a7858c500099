#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Calibration checked against training: `mini5d calibrate --quick` on 2 ranks (virtual
# nodes of 1), the planner's step for the deck's layout (d = 2, micro-batch 16) on that
# file, then 40 steps of training under the same launch. The prediction must be within
# 35% of the measured step (median of steps 2-40). The bound is the spread measured on
# this 2-core box, with room: 20 runs of this flow gave -10.6% .. +1.3% (median -4.6%);
# a busy-loop on one core during a run drove it to -54%, so a run beyond the bound is
# tried once more, calibration and training again, before it fails. The benchmark
# (perf/bench_calibration.py) keeps the 15% bound. The same file with every figure made
# 4x faster must be outside the bound, or the comparison proves nothing.
# usage: calibrate_predicts.sh WORKDIR MPIEXEC MINI5D_APP MINI5D_PLAN TINY_DECK
set -u
work=$1 mpiexec=$2 app=$3 plan=$4 deck=$5
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
layout=(--layout d=2,mb=16 --global-batch 32 --json)

# One round: calibrate, predict, train. Writes plan.json and train.json.
round() {
  "$mpiexec" -n 2 "$app" calibrate "$deck" parallel.ranks_per_node=1 --out cal.yaml --quick > cal.out 2>&1 ||
    fail "calibrate: $(cat cal.out)"
  "$plan" --model "$deck" --cluster cal.yaml "${layout[@]}" > plan.json 2> plan.err ||
    fail "planner refused the calibrated file: $(cat plan.err)"
  "$mpiexec" -n 2 "$app" train "$deck" parallel.d=2 parallel.ranks_per_node=1 train.steps=40 \
    output.report=train.json output.log_every=1000 > train.out 2>&1 || fail "train: $(cat train.out)"
}

# Exit 0 within the bound, 1 beyond it; the figures on one line either way.
compare() {
  python3 - "$1" <<'PY'
import json, sys
steps = sorted(s["seconds"] for s in json.load(open("train.json"))["steps"][1:])
assert len(steps) == 39, len(steps)
measured = steps[len(steps) // 2]
predicted = json.load(open(sys.argv[1]))["given"]["plan"]["time_s"]["step"]
error = predicted / measured - 1
print(f"{sys.argv[1]}: predicted {predicted * 1e3:.2f} ms, measured {measured * 1e3:.2f} ms ({error:+.1%})")
sys.exit(0 if abs(error) <= 0.35 else 1)
PY
}

round
if ! compare plan.json; then
  echo "beyond 35%: calibrating and training once more"
  round
  compare plan.json || fail "the calibrated prediction is beyond 35% of the measured step twice"
fi

# The calibrated machine made 4x faster in every figure: rates x4, fixed costs / 4.
python3 - <<'PY' || fail "could not write the 4x file"
import yaml
c = yaml.safe_load(open("cal.yaml"))
d = c["device"]
d["memory_bandwidth_gbs"] *= 4
d["kernel_overhead_us"] /= 4
for k in ("peak_tflops", "sustained_tflops"):
    d[k] = {p: r * 4 for p, r in d[k].items()}
for k in ("elementwise_gbs", "softmax_gbs", "optimizer_gbs"):
    d["memory_bound"][k] *= 4
d["memory_bound"]["fixed_us_per_block"] /= 4
d["gemm"]["call_overhead_us"] /= 4
d["gemm"]["table"] = [row[:4] + [row[4] * 4] for row in d["gemm"]["table"]]
for tier in c["links"].values():
    tier["bandwidth_gbs"] *= 4
    tier["latency_us"] /= 4
    for k in ("curve", "gather_curve", "send_curve"):
        if k in tier:
            tier[k] = [[n, b * 4] for n, b in tier[k]]
yaml.safe_dump(c, open("fast.yaml", "w"))
PY
"$plan" --model "$deck" --cluster fast.yaml "${layout[@]}" > fast.json 2> fast.err ||
  fail "planner on the 4x file: $(cat fast.err)"
compare fast.json && fail "the 4x file's prediction passes the 35% bound"
echo "ok: the calibrated prediction is within 35% of training, a 4x miscalibrated one is not"
