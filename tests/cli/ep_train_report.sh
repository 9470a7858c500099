#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Expert parallelism from the command line: trains the MoE tiny deck at e=2 on 2 ranks,
# dropless and in capacity mode, and checks the outputs: the progress line's compact
# MoE part, the summary's per-expert loads, and the JSON report's per-step moe record
# (every routed assignment counted once when dropless; drops in capacity mode), with
# the expert parameters predicted equal to measured.
# usage: ep_train_report.sh WORKDIR MPIEXEC NPFLAG APP DECK
set -euo pipefail
work=$1 mpiexec=$2 np=$3 app=$4 deck=$5
mkdir -p "$work" && cd "$work" && rm -rf ck1 ck2 r1.json r2.json
for run in 1 2; do
  cf=0; [[ $run == 2 ]] && cf=0.5
  out=$("$mpiexec" "$np" 2 "$app" train "$deck" parallel.e=2 train.micro_batch=8 train.steps=4 output.log_every=1 \
        model.capacity_factor=$cf checkpoint.dir=ck$run output.report=r$run.json)
  echo "$out" | grep -E "^step|^mixture|mixture of experts"
  echo "$out" | grep -qE "^step 4/4 .*  moe aux [0-9.]+ imb [0-9.]+" || { echo "FAIL: no moe part in the progress line"; exit 1; }
  echo "$out" | grep -qE "^mixture of experts: tokens per expert over the run \[[0-9 ]+\]" || { echo "FAIL: no summary"; exit 1; }
  CF=$cf REPORT=r$run.json python3 - <<'PY'
import json, os
r = json.load(open(os.environ["REPORT"]))
m = r["deck"]["model"]; t = r["deck"]["train"]; p = r["deck"]["parallel"]
assigned = t["micro_batch"] * p["d"] * p["e"] * m["seq"] * m["top_k"] * m["layers"]
mem = r["memory_bytes"]
assert mem["expert_params_predicted"] == mem["expert_params_measured"] > 0, mem
for s in r["steps"]:
    moe = s["moe"]
    assert len(moe["expert_load"]) == m["experts"]
    assert moe["aux_loss"] > 0 and moe["imbalance"] >= 1
    assert sum(moe["expert_load"]) + moe["dropped"] == assigned, (moe, assigned)
    if os.environ["CF"] == "0":
        assert moe["dropped"] == 0
assert os.environ["CF"] == "0" or any(s["moe"]["dropped"] > 0 for s in r["steps"]), "capacity 0.5 dropped nothing"
print("report ok:", os.environ["REPORT"], [s["moe"]["dropped"] for s in r["steps"]])
PY
done
