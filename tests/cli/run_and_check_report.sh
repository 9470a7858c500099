#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs a short training and checks its outputs: the FOM line, and a JSON report that
# parses, has the schema version, the deck, one entry per step and finite losses.
# usage: run_and_check_report.sh WORKDIR command args...   (the command writes report.json)
set -eu
work=$1; shift
mkdir -p "$work" && cd "$work" && rm -f report.json
out=$("$@")
echo "$out" | tail -n 12
echo "$out" | grep -qE '^FOM mini5d tokens_per_s=[0-9.]+ model_flops_per_s=[0-9.e+]+ valid=1$' \
  || { echo "FAIL: no FOM line"; exit 1; }
python3 - <<'PY'
import json, math
r = json.load(open("report.json"))
assert r["schema_version"] == 1, r["schema_version"]
steps = r["deck"]["train"]["steps"]
assert len(r["steps"]) == steps, (len(r["steps"]), steps)
assert all(math.isfinite(s["loss"]) for s in r["steps"])
assert r["fom"]["tokens_per_s"] > 0
assert r["model"]["flops_per_token"] > 0
print("report ok:", len(r["steps"]), "steps, final loss", r["steps"][-1]["loss"])
PY
