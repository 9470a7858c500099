#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# `mini5d ceilings CLUSTER.yaml` caches a cluster file's device figures, a
# training run then prints the kernel table against them and writes the same table
# to its report (families with work, shares that add up with "other" to the step),
# `mini5d ceilings` without argument shows the cache, and a bad argument is refused.
# usage: kernel_table.sh WORKDIR MINI5D_APP TINY_DECK CLUSTER_FILE
set -u
work=$1 app=$2 deck=$3 cluster=$4
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
export MINI5D_CEILINGS=$work/ceilings.json
fail() { echo "FAIL: $*"; exit 1; }
"$app" ceilings "$cluster" > set.out 2>&1 || fail "ceilings from $cluster: $(cat set.out)"
grep -q "sgemm 102.0 GFLOP/s, stream triad 20.0 GB/s" set.out || fail "cluster figures: $(cat set.out)"
"$app" ceilings > show.out 2>&1 || fail "ceilings (cached): $(cat show.out)"
grep -q "source: $work/ceilings.json (cached)" show.out || fail "cached ceilings not shown: $(cat show.out)"
"$app" ceilings nonsense=1 > bad.out 2>&1 && fail "ceilings nonsense=1 was accepted"
grep -q "ceilings takes \"refresh\" or a cluster file" bad.out || fail "bad argument line: $(cat bad.out)"
"$app" train "$deck" train.steps=5 output.report=r.json output.log_every=100 > train.out 2>&1 ||
  fail "train: $(tail -5 train.out)"
# The cluster file's sgemm figure (102 GFLOP/s) is close to what this machine's GEMMs
# reach; a run that beats it calls the ceilings stale instead, which is right too.
grep -Eq "^kernel breakdown \(rank 0, 4 step\(s\) after the first; (ceilings: sgemm 102.0 GFLOP/s, stream 20.0 GB/s|the ceilings in .* are stale, [a-z_]+ ran at [0-9]+% of the sgemm rate)" \
  train.out || fail "no kernel table header: $(cat train.out)"
grep -Eq "^  gemm +[0-9.]+ +[0-9.]+% " train.out || fail "no gemm row"
python3 - <<'PY' || fail "report's kernel record"
import json
k = json.load(open("r.json"))["kernels"]
assert k["steps"] == 4, k["steps"]
assert k["ceilings"]["gemm_gflops"] == 102 and k["ceilings"]["stream_gbs"] == 20, k["ceilings"]
names = [f["name"] for f in k["families"]]
for want in ("gemm", "attention_gemm", "attention", "layernorm", "gelu", "cross_entropy", "embedding",
             "optimizer", "norm"):
    assert want in names, (want, names)
shares = sum(f["share"] for f in k["families"])
other = k["other_seconds_per_step"] / k["step_seconds"]
assert abs(shares + other - 1) < 1e-3, (shares, other)
g = [f for f in k["families"] if f["name"] == "gemm"][0]
# tiny: 2 layers x (qkv 64x192 + proj 64x64 + fc 64x256 + proj 256x64) + head 64x16 weights,
# 512 tokens, forward + two backward products: 6 x weights x tokens FLOPs per step.
weights = 2 * (64 * 192 + 64 * 64 + 64 * 256 + 256 * 64) + 64 * 16
assert g["flops_per_step"] == 6 * weights * 512, (g["flops_per_step"], 6 * weights * 512)
assert 0 < g["gflops"], g
assert (0 < g["roofline_fraction"] <= 1) if k["ceilings"]["stale"] is None else g["roofline_fraction"] is None, g
for f in k["families"]:  # never a fraction above 100%
    assert f["roofline_fraction"] is None or f["roofline_fraction"] <= 1, f
PY
# A cache older than the binary reading it is stale: no roofline fractions, and the way
# to re-measure named.
touch -d 2000-01-01 ceilings.json
"$app" train "$deck" train.steps=3 output.report=r2.json output.log_every=100 > stale.out 2>&1 ||
  fail "train with a stale cache: $(tail -5 stale.out)"
grep -q "are stale, measured before this mini5d was built: re-measure with \`mini5d ceilings\`" stale.out ||
  fail "an old cache was not called stale: $(grep -A2 '^kernel breakdown' stale.out)"
python3 -c 'import json,sys; k=json.load(open("r2.json"))["kernels"]; sys.exit(not (k["ceilings"]["stale"] and all(f["roofline_fraction"] is None for f in k["families"])))' ||
  fail "r2.json: stale ceilings still give roofline fractions"
echo "ok: ceilings from the cluster file, kernel table in the summary and the report; an old cache is stale"
