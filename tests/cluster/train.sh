#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A 4-rank run on 2 test hosts, t2 x d2 with the tensor groups inside the hosts, against
# the single-rank run of the same deck: the start-up header names each rank's host
# and counts 2 real nodes (no parallel.ranks_per_node), the placement table puts t
# inside a node and d across, losses and gradient norms match one rank (the invariance
# oracle's 1e-5), the bytes of each axis are the planner's, and the bytes that crossed
# the shaped link (the hosts' tbf counters) are those of the axes placed across nodes,
# not those kept inside: proof that t used shared memory and d the link.
# usage: train.sh WORKDIR APP MPIEXEC INPUTS
source "$(dirname "$0")/common.sh"
(($# == 4)) || { echo "usage: train.sh WORKDIR APP MPIEXEC INPUTS" >&2; exit 2; }
work=$1 app=$2 mpiexec=$3 inputs=$4
require_cluster
rm -rf "$work" && mkdir -p "$work" && cd "$work" || fail "cannot make $work"
steps=10
# The same global batch of 16 sequences: 16 on one rank, 8 on each of the d = 2 replicas.
args=("$inputs/tiny.yaml" "train.steps=$steps" output.log_every=1)

MINI5D_NO_BIND=1 OPENBLAS_NUM_THREADS=1 timeout -k 5 120 "$mpiexec" -n 1 "$app" train "${args[@]}" \
  checkpoint.dir=ref-ck output.report=ref.json > ref.log 2>&1 || { tail -n 5 ref.log; fail "the one-rank run failed"; }

link_bytes() {  # bytes sent through the tbf of every host's eth0 so far
  local h sum=0 b
  for h in "${HOSTS[@]}"; do
    b=$(in_host "$h" tc -s qdisc show dev eth0 | awk '/Sent/ {print $2; exit}')
    sum=$((sum + b))
  done
  echo "$sum"
}
before=$(link_bytes)
cluster_run 240 run.log run.json 2 2 "$app" train "${args[@]}" parallel.t=2 parallel.d=2 train.micro_batch=8 \
  checkpoint.dir=run-ck output.report=run.json
crossed=$(($(link_bytes) - before))

# The header: 2 real nodes, each rank's host.
grep -q '^placement: 2 node(s);' run.log || fail "the header does not say 2 (real) nodes: $(grep -m1 '^placement:' run.log)"
for r in 0 1 2 3; do
  want=${HOSTS[$((r / 2))]}
  grep -qE "^  rank $r \(node $((r / 2)), $want\):" run.log ||
    fail "rank $r is not on node $((r / 2)) ($want): $(grep -E "^  rank $r " run.log)"
done
grep -qE '^  t +tensor +2 +2 +intra-node' run.log || fail "t is not inside the nodes: $(grep -E '^  t ' run.log)"
grep -qE '^  d +data +2 +2 +inter-node' run.log || fail "d does not cross the nodes: $(grep -E '^  d ' run.log)"

python3 "$here/compare_losses.py" ref.json run.json || exit 1

# Per tier: the link carried d's bytes (every rank's share crosses) and not t's.
read -r t_bytes d_bytes < <(python3 -c '
import json, sys
b = json.load(open("run.json"))["bytes_per_step"]
print(b["t"]["measured"], b["d"]["measured"])')
inter=$((4 * steps * d_bytes)) intra=$((4 * steps * t_bytes))
echo "tiers: $intra bytes of t inside the hosts, $inter bytes of d across; $crossed bytes crossed the link"
((crossed >= inter)) || fail "only $crossed bytes crossed the link, less than d's $inter"
# Headers, start-up and the progress lines add a little; t's traffic (8 times d's here) would show.
((crossed < inter + intra / 4)) || fail "$crossed bytes crossed the link: part of t's $intra did"
echo "PASS"
