#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# `mini5d calibrate` on 2 ranks in virtual nodes of 1 measures the
# deck's products, the memory-bound kernels and an across-node tier, and writes a
# cluster file the planner loads; the planner's GEMM time for the deck's layout is then
# exactly the table's (every product it asks for was measured), and bad options are
# one line each.
# usage: calibrate.sh WORKDIR MPIEXEC MINI5D_APP MINI5D_PLAN TINY_DECK
set -u
work=$1 mpiexec=$2 app=$3 plan=$4 deck=$5
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
"$mpiexec" -n 2 "$app" calibrate "$deck" parallel.ranks_per_node=1 --out cal.yaml --quick > cal.out 2>&1 ||
  fail "calibrate: $(cat cal.out)"
grep -q "^calibrate: 2 rank(s), 2 node(s) of 1 (virtual nodes" cal.out || fail "no header: $(cat cal.out)"
grep -q "^calibrate: across nodes (2 ranks per group)" cal.out || fail "no across-node line: $(cat cal.out)"
grep -q "^calibrate: wrote cal.yaml" cal.out || fail "not written: $(cat cal.out)"
[ -e cal.yaml.tmp ] && fail "temporary file left behind"
"$plan" --model "$deck" --cluster cal.yaml --layout d=2,mb=16 --global-batch 32 --json > plan.json 2> plan.err ||
  fail "planner refused the calibrated file: $(cat plan.err)"
python3 - <<'PY' || fail "calibrated file or prediction"
import json, yaml
c = yaml.safe_load(open("cal.yaml"))
assert c["nodes"] == 2 and c["devices_per_node"] == 1, c
dev = c["device"]
assert dev["gemm"]["model"] == "measured"
assert dev["memory_bound"]["measured"] is True
for k in ("elementwise_gbs", "softmax_gbs", "optimizer_gbs"):
    assert dev["memory_bound"][k] > 0, k
net = c["links"]["inter_node"]
for k in ("curve", "gather_curve", "send_curve"):
    assert len(net[k]) >= 3 and all(b > 0 for _, b in net[k]), (k, net[k])
assert c["links"]["intra_node"]["name"] == "not measured"
assert c["software"]["attention_block"] == 64
table = {(r[0], r[1], r[2], r[3]): r[4] for r in dev["gemm"]["table"]}
# tiny at d=2, micro-batch 16: N = 512 tokens, D 64, F 256, V 16, 4 heads of 16, T 32.
N, D, F, V, T, BH = 512, 64, 256, 16, 32, 16 * 4
def linear(out, inp):
    return [("NT", N, out, inp, 1), ("NN", N, inp, out, 1), ("TN", out, inp, N, 1)]
dense = []
for out, inp in ((3 * D, D), (D, D), (F, D), (D, F)):
    dense += linear(out, inp)
# Forward QK^T, PV; backward dP, dV, dQ, dK and (blockwise attention, the default) the
# scores again.
attention = [("NT", T, T, 16, BH), ("NN", T, 16, T, BH), ("NT", T, T, 16, BH), ("TN", T, 16, T, BH),
             ("NN", T, 16, T, BH), ("TN", T, 16, T, BH), ("NT", T, T, 16, BH)]
head = linear(V, D)
def seconds(calls):
    s = 0
    for op, m, n, k, count in calls:
        assert (op, m, n, k) in table, ("not measured", op, m, n, k)
        s += count * 2 * m * n * k / (table[(op, m, n, k)] * 1e9)
    return s
parts = json.load(open("plan.json"))["given"]["plan"]["time_s"]["compute_parts"]
gemm, att = 2 * seconds(dense) + seconds(head), 2 * seconds(attention)
# The table's GFLOP/s carry 5 significant digits.
assert abs(parts["gemm"] / gemm - 1) < 1e-4, (parts["gemm"], gemm)
assert abs(parts["attention_gemm"] / att - 1) < 1e-4, (parts["attention_gemm"], att)
# The memory-bound part's fixed cost per block (fitted at two micro-batches) stands in
# for the per-kernel launch charge: 2 blocks, one micro-batch.
fixed = dev["memory_bound"]["fixed_us_per_block"] * 1e-6
assert abs(parts["launch"] - 2 * fixed) <= 1e-6 * max(fixed, 1e-9), (parts["launch"], fixed)
PY
"$mpiexec" -n 1 "$app" calibrate "$deck" --bogus > bad.out 2>&1 && fail "--bogus accepted"
grep -q "calibrate: \"--bogus\" is not an option (valid: --out FILE, --base CLUSTER.yaml, --quick)" bad.out ||
  fail "bad option line: $(cat bad.out)"
[ "$(wc -l < bad.out)" -eq 1 ] || fail "more than one line: $(cat bad.out)"
"$mpiexec" -n 1 "$app" calibrate "$deck" --base no_such_cluster.yaml > base.out 2>&1 && fail "missing --base accepted"
grep -q "no_such_cluster.yaml" base.out || fail "missing base not named: $(cat base.out)"
echo "ok: calibrated cluster file loads, every product of the deck's layout measured, bad options refused"
