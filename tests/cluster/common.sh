# SPDX-License-Identifier: BSD-3-Clause
# Shared by the `cluster` tests (sourced): reach the test cluster of
# scripts/start-cluster.sh, skip visibly where it could not be made, and run MPI jobs
# across its hosts with a deadline. Every failure prints one "FAIL: ..." line first.
: "${MINI5D_CLUSTER_DIR:=/tmp/mini5d-cluster}"
export MINI5D_CLUSTER_DIR
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

fail() {
  echo "FAIL: $*"
  exit 1
}
# The cluster must be up; where this machine cannot make namespaces, skip (exit 77,
# the tests' SKIP_RETURN_CODE) with the reason start-cluster.sh recorded.
require_cluster() {
  local status
  status=$(cat "$MINI5D_CLUSTER_DIR/status" 2>/dev/null) ||
    fail "no test cluster ($MINI5D_CLUSTER_DIR/status missing): ctest starts it (cluster_start), or run scripts/start-cluster.sh"
  if [[ $status == unsupported:* ]]; then
    echo "SKIP: the test cluster cannot be made here: ${status#unsupported: }"
    exit 77
  fi
  [[ $status == up ]] || fail "the test cluster is not up: $status"
  mapfile -t HOSTS < <(awk '{print $1}' "$MINI5D_CLUSTER_DIR/hosts")
  mapfile -t ADDRS < <(awk '{print $2}' "$MINI5D_CLUSTER_DIR/hosts")
  RATE=$(cat "$MINI5D_CLUSTER_DIR/rate")
}
in_host() { "$root/scripts/cluster-enter.sh" "$@"; }

# cluster_run SECONDS LOG REPORT HOSTS PPN CMD...: mpiexec across the hosts, output in LOG.
# MPICH 4.0's UCX over TCP (Debian 12: UCX 1.13) can hang in MPI_Finalize after the
# work is done: a rank's endpoint close waits for a peer that already sits in the
# process manager's final barrier, where nothing progresses UCX. cluster-mpiexec.sh
# preloads scripts/ucx-finalize-progress.c against it (docs/two-tier-cluster.md); as a
# safety net, once REPORT (written by rank 0 after the last collective) exists, the job
# still gets 15 s to exit; if it has not, its processes are ended, the log says so, and
# the run counts as complete. Without a report by the deadline the test fails.
cluster_run() {
  local limit=$1 log=$2 report=$3 t0=$SECONDS done_at=""
  shift 3
  rm -f "$report"
  MINI5D_NO_BIND=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 setsid "$root/scripts/cluster-mpiexec.sh" "$@" > "$log" 2>&1 &
  local job=$!
  while kill -0 "$job" 2>/dev/null; do
    if [[ -z $done_at && -s $report ]]; then done_at=$SECONDS; fi
    if [[ -n $done_at ]] && ((SECONDS - done_at > 15)); then
      echo "note: the job hung in MPI_Finalize after writing $report (UCX TCP close); ending it" | tee -a "$log"
      end_job "$job"
      return 0
    fi
    if ((SECONDS - t0 > limit)); then
      end_job "$job"
      tail -n 20 "$log"
      fail "the job did not finish in ${limit}s"
    fi
    sleep 0.2
  done
  wait "$job" || { tail -n 20 "$log"; fail "mpiexec $* exited $?"; }
}
# end_job PID: mpiexec's process group, then whatever is left inside the hosts.
end_job() {
  kill -TERM -- "-$1" 2>/dev/null
  sleep 1
  kill -KILL -- "-$1" 2>/dev/null
  local h
  for h in "${HOSTS[@]}"; do ip netns pids "$h"; done | xargs -r kill -KILL 2>/dev/null
  wait "$1" 2>/dev/null
}
