#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# On a machine with a GPU: builds mini5d against a given Kokkos CUDA (or HIP) install,
# runs the test suite on the GPU (scripts/check-backend.sh), then trains gpt2-124m on
# one GPU and prints its throughput and MFU against the device's fp32 peak from a
# planner cluster file (mini5d trains in fp32).
# usage: scripts/gpu-check.sh KOKKOS_ROOT KOKKOSKERNELS_ROOT [CLUSTER.yaml] [STEPS]
#   CLUSTER.yaml: the device's figures (default inputs/clusters/h200-8.yaml)
#   STEPS: training steps of the throughput run (default 20; the FOM is their median
#   after the first)
# Output: check-backend's verdict line, then
#   "gpu-check: gpt2-124m on <device>: <tokens/s> tokens/s, <TFLOP/s> model TFLOP/s, MFU <x>% of <peak> fp32"
set -uo pipefail
if [[ $# -lt 2 || $# -gt 4 ]]; then
  sed -n '3,13p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
cluster=${3:-$root/inputs/clusters/h200-8.yaml}
steps=${4:-20}
[[ -f $cluster ]] || { echo "gpu-check: no cluster file $cluster"; exit 2; }
export BUILD_DIR=${BUILD_DIR:-$root/build-gpu}
"$root/scripts/check-backend.sh" "$1" "$2"
checked=$?
app=$BUILD_DIR/apps/mini5d
[[ -x $app ]] || { echo "gpu-check: no $app (the build failed)"; exit 1; }
report=$BUILD_DIR/gpu-check-report.json
"$app" train "$root/inputs/gpt2-124m.yaml" train.steps="$steps" output.log_every=5 output.report="$report" \
  checkpoint.dir="$BUILD_DIR/gpu-check-ckpt" checkpoint.overwrite=true > "$BUILD_DIR/gpu-check-train.log" 2>&1 ||
  { tail -n 5 "$BUILD_DIR/gpu-check-train.log"; echo "gpu-check: the gpt2-124m run failed"; exit 1; }
python3 - "$report" "$cluster" <<'PY' || exit 1
import sys, json, yaml
r = json.load(open(sys.argv[1]))
dev = yaml.safe_load(open(sys.argv[2]))["device"]
peak = float(dev["peak_tflops"]["fp32"]) * 1e12
fom = r["fom"]
print(f"gpu-check: gpt2-124m on {dev['name']} ({r['platform']['backend']}): {fom['tokens_per_s']:.0f} tokens/s, "
      f"{fom['model_flops_per_s'] / 1e12:.2f} model TFLOP/s, MFU {100 * fom['model_flops_per_s'] / peak:.1f}% "
      f"of {peak / 1e12:.0f} TFLOP/s fp32")
PY
exit $checked
