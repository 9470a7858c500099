# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash
# Shared by the cluster's Slurm tests (sourced): the `slurm` tests' helpers (submit,
# field, wait_state, wait_step, sacct), pointed at the Slurm across the test hosts
# (scripts/start-slurm.sh --cluster, state in MINI5D_SLURM_DIR), and the planner's deck
# and script for tiny on the test cluster.
: "${MINI5D_CLUSTER_DIR:=/tmp/mini5d-cluster}"
: "${MINI5D_SLURM_DIR:=$MINI5D_CLUSTER_DIR/slurm}"
export MINI5D_CLUSTER_DIR MINI5D_SLURM_DIR
source "$(dirname "${BASH_SOURCE[0]}")/../slurm/common.sh"
cluster_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# setup_cluster_test WORKDIR PLAN APP INPUTS: a fresh work directory holding the planner's
# deck (plan.yaml) and sbatch script (plan.sh) for tiny on testbed-2tier as t2 x d2 (the
# tensor pairs inside the hosts, d across), 4 ranks on 2 hosts, and HOSTS (the test hosts'
# names); skips (77) where the test cluster cannot be made.
setup_cluster_test() {
  WORK=$1 PLAN=$2 APP=$3 INPUTS=$4
  local status
  status=$(cat "$MINI5D_CLUSTER_DIR/status" 2>/dev/null)
  if [[ $status == unsupported:* ]]; then echo "SKIP: the test cluster cannot be made here: ${status#unsupported: }"; exit 77; fi
  mapfile -t HOSTS < <(awk '{print $1}' "$MINI5D_CLUSTER_DIR/hosts")
  export MINI5D=$APP  # the emitted script starts $MINI5D
  rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK" || fail "cannot make $WORK"
  require_slurm
  [[ $(sinfo -h -N -o %N | sort -u | wc -l) -ge 2 ]] || fail "the Slurm in $MINI5D_SLURM_DIR has fewer than 2 nodes"
  "$PLAN" --model "$INPUTS/tiny.yaml" --cluster "$INPUTS/clusters/testbed-2tier.yaml" --global-batch 16 \
    --layout t=2,d=2,mb=8,m=1 --emit-deck plan.yaml --emit-slurm plan.sh > plan.out 2>&1 ||
    { cat plan.out; fail "mini5d-plan failed"; }
}

# cluster_reference DECK REPORT ARGS...: the deck trained uninterrupted across the same 2
# hosts with mpiexec (scripts/cluster-mpiexec.sh; PPN ranks on each, default 2), outside
# Slurm, into REPORT (REF_TIMEOUT seconds at most, default 120);
# then exports SLURM_EXPORT_ENV so that sbatch's srun hands the ranks (only them) the
# preload cluster-mpiexec.sh built against MPICH's finalize hang over UCX TCP
# (docs/two-tier-cluster.md).
cluster_reference() {
  local deck=$1 report=$2
  shift 2
  rm -rf ref-ck
  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MINI5D_NO_BIND=1 timeout "${REF_TIMEOUT:-120}" "$cluster_root/scripts/cluster-mpiexec.sh" 2 "${PPN:-2}" \
    "$APP" train "$deck" checkpoint.dir=ref-ck output.report="$report" "$@" > ref.out 2>&1 ||
    { tail -n 5 ref.out; fail "the reference run across the hosts failed"; }
  export_finalize_preload
}

# export_finalize_preload: SLURM_EXPORT_ENV hands the ranks the preload that
# cluster-mpiexec.sh built (run it once first).
export_finalize_preload() {
  local lib
  lib=$MINI5D_CLUSTER_DIR/ucx-finalize-progress.$(cksum < "$cluster_root/scripts/ucx-finalize-progress.c" | cut -d' ' -f1).so
  [[ -s $lib ]] || fail "cluster-mpiexec.sh built no $lib"
  export SLURM_EXPORT_ENV="ALL,LD_PRELOAD=$lib"
}

# on_both_hosts LOG: the run's header put ranks 0-1 on the first test host and 2-3 on the second.
on_both_hosts() {
  local log=$1 h1=${HOSTS[0]} h2=${HOSTS[1]}
  for r in 0 1; do grep -q "rank $r (node 0, $h1)" "$log" || fail "$log: rank $r not on $h1"; done
  for r in 2 3; do grep -q "rank $r (node 1, $h2)" "$log" || fail "$log: rank $r not on $h2"; done
  grep -qE '^  t +tensor +2 +2 +intra-node' "$log" || fail "$log: t is not inside the hosts"
  grep -qE '^  d +data +2 +2 +inter-node' "$log" || fail "$log: d does not cross the hosts"
}
