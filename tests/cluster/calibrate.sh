#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# `mini5d calibrate` on 2 test hosts x 2 ranks: 2 real nodes of 2 (no
# parallel.ranks_per_node), and a cluster file whose two tiers come from the two real
# links. At the curves' largest message (where latency no longer hides the bandwidth,
# the figure calibrate prints) the across-node all-reduce is at most the shaped rate
# (within 20%: the bus bandwidth cannot beat the wire) and the inside-node one clearly
# faster (at least 3x). The 10x that start-cluster.sh requires is of the raw tiers; the
# calibrated inside-node figure is an all-reduce of 2 ranks while the other host's 2
# ranks poll on the same 2 cores, and it swings with the load (0.2 to 43 GB/s measured
# across runs: 7.5x in a CI run, about 5x under a build), so 10x here failed 2 runs in 10.
# The figures are printed; their size is a benchmark's question, not this test's.
# usage: calibrate.sh WORKDIR APP INPUTS
source "$(dirname "$0")/common.sh"
(($# == 3)) || { echo "usage: calibrate.sh WORKDIR APP INPUTS" >&2; exit 2; }
work=$1 app=$2 inputs=$3
require_cluster
rm -rf "$work" && mkdir -p "$work" && cd "$work" || fail "cannot make $work"
cluster_run 240 cal.out "$work/cal.yaml" 2 2 "$app" calibrate "$inputs/tiny.yaml" --quick --out "$work/cal.yaml"
grep -q '^calibrate: 4 rank(s), 2 node(s) of 2, ' cal.out || fail "not 2 real nodes of 2: $(grep -m1 '^calibrate: 4' cal.out)"
python3 - "$RATE" <<'PY' || fail "the calibrated tiers"
import sys, yaml
rate = float(sys.argv[1]) / 1e9  # GB/s
links = yaml.safe_load(open("cal.yaml"))["links"]
inter = links["inter_node"]["curve"][-1][1]
intra = links["intra_node"]["curve"][-1][1]
print(f"calibrated: inside a node {intra:.3g} GB/s, across nodes {inter:.3g} GB/s "
      f"(the link: {rate:.3g} GB/s), ratio {intra / inter:.1f}x")
assert inter <= 1.2 * rate, f"across nodes {inter} GB/s is faster than the shaped link"
assert intra >= 3 * inter, f"inside a node only {intra / inter:.1f}x faster than across"
PY
echo "PASS"
