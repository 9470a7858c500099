#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs a short training and checks its outputs: the FOM line, and a JSON report that
# parses, has the schema version, the deck and one entry per step. The FOM's validity
# is recomputed from the report's steps (README "Outputs": at least one step, every
# loss and gradient norm finite, the final loss below the first) and must agree with
# both the FOM line and the report's fom.valid, and equal EXPECT_VALID (default 1).
# usage: [EXPECT_VALID=0|1] run_and_check_report.sh WORKDIR command args...
#        (the command writes report.json)
set -euo pipefail
work=$1; shift
expect=${EXPECT_VALID:-1}
mkdir -p "$work" && cd "$work" && rm -f report.json
out=$("$@")
echo "$out" | tail -n 12
echo "$out" | grep -qE "^FOM mini5d tokens_per_s=[0-9.]+ model_flops_per_s=[0-9.e+]+ valid=$expect\$" \
  || { echo "FAIL: no FOM line with valid=$expect"; exit 1; }
EXPECT_VALID=$expect python3 - <<'PY'
import json, math, os
r = json.load(open("report.json"))
assert r["schema_version"] == 1, r["schema_version"]
steps = r["deck"]["train"]["steps"]
assert len(r["steps"]) == steps, (len(r["steps"]), steps)
assert r["fom"]["tokens_per_s"] > 0
assert r["model"]["flops_per_token"] > 0
s = r["steps"]
finite = lambda x: isinstance(x, (int, float)) and math.isfinite(x)
valid = bool(s) and all(finite(x["loss"]) and finite(x["grad_norm"]) for x in s) and s[-1]["loss"] < s[0]["loss"]
assert r["fom"]["valid"] == valid, ("report says", r["fom"]["valid"], "steps say", valid)
assert valid == (os.environ["EXPECT_VALID"] == "1"), ("valid", valid, "expected", os.environ["EXPECT_VALID"])
print("report ok:", len(s), "steps, first loss", s[0]["loss"] if s else None,
      "final loss", s[-1]["loss"] if s else None, "valid", valid)
PY
