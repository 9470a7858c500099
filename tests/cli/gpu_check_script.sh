#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The GPU check's measuring half (perf/gpu_check.py, which scripts/gpu-check.sh runs on a
# GPU node) kept working where there is no GPU: on the tiny deck, mini5d rows only (no
# PyTorch GPU here), both precisions. It must write gpu-check.md and gpu-check.json, with
# a row per precision, positive tokens/s and a kernel table; MFU against the cluster
# file's dense peaks; and a cluster file without a bf16 peak refused with one line.
# usage: gpu_check_script.sh WORKDIR MINI5D_APP SOURCE_DIR
set -u
work=$1 app=$2 src=$3
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
python3 "$src/perf/gpu_check.py" --app "$app" --cluster "$src/inputs/clusters/h100-sxm-8.yaml" --out out \
  --steps 3 --decks tiny --no-peer > run.out 2>&1 || fail "gpu_check.py: $(tail -5 run.out)"
[[ -f out/gpu-check.md && -f out/gpu-check.json ]] || fail "no gpu-check.md or .json in $work/out"
grep -q "^GPU check on H100 SXM5 80GB (dense peaks from the cluster file: fp32 67, bf16 989 TFLOP/s)" out/gpu-check.md ||
  fail "table header: $(head -2 out/gpu-check.md)"
python3 - <<'PY' || fail "rows"
import json
rows = json.load(open("out/gpu-check.json"))
assert [(r["deck"], r["precision"], r["run"]) for r in rows] == [("tiny", "fp32", "mini5d"), ("tiny", "bf16", "mini5d")], rows
for r in rows:
    assert r["rc"] == 0 and r["tokens_per_s"] > 0 and 0 < r["mfu"] < 1, r
    assert abs(r["mfu"] - r["tflops"] / {"fp32": 67, "bf16": 989}[r["precision"]]) < 1e-9 * max(1, r["mfu"]), r
    assert "gemm" in r["kernels"], r["kernels"]
PY
sed '/peak_tflops/,/fp64/{/bf16/d}' "$src/inputs/clusters/h100-sxm-8.yaml" > nobf16.yaml
python3 "$src/perf/gpu_check.py" --app "$app" --cluster nobf16.yaml --out out2 --decks tiny --no-peer > bad.out 2>&1 &&
  fail "a cluster file without a bf16 peak was accepted"
grep -q "nobf16.yaml: device.peak_tflops needs fp32 and bf16" bad.out || fail "refusal line: $(cat bad.out)"
echo "gpu_check_script: ok"
