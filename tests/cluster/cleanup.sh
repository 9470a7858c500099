#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Clean-up: a test cluster of its own (state in WORKDIR, names m5dc-*, 198.18.1.0/24),
# a 4-rank job on it killed half-way (mpiexec killed with SIGKILL) and a stray process
# left in each host, then scripts/stop-cluster.sh: afterwards no namespace,
# veth, bridge, qdisc, mount, namespace file or process of that cluster may be left,
# and another cluster that was up (the fixture's) must still be up.
# usage: cleanup.sh WORKDIR APP INPUTS
source "$(dirname "$0")/common.sh"
(($# == 3)) || { echo "usage: cleanup.sh WORKDIR APP INPUTS" >&2; exit 2; }
work=$1 app=$2 inputs=$3
rm -rf "$work" && mkdir -p "$work" && cd "$work" || fail "cannot make $work"
export MINI5D_CLUSTER_DIR=$work/state MINI5D_CLUSTER_NAME=m5dc MINI5D_CLUSTER_NET=198.18.1
others=$(ip netns list 2>/dev/null | awk '$1 !~ /^m5dc-/ {print $1}' | sort | tr '\n' ' ')
stop() { "$root/scripts/stop-cluster.sh" > stop.log 2>&1; }
trap stop EXIT  # whatever happens, this test's cluster goes

"$root/scripts/start-cluster.sh" 2 > start.log 2>&1
rc=$?
if ((rc == 3)); then
  echo "SKIP: the test cluster cannot be made here: $(cat "$MINI5D_CLUSTER_DIR/status")"
  exit 77
fi
((rc == 0)) || fail "start-cluster.sh exited $rc: $(cat start.log)"
mapfile -t HOSTS < <(awk '{print $1}' "$MINI5D_CLUSTER_DIR/hosts")

MINI5D_NO_BIND=1 OPENBLAS_NUM_THREADS=1 setsid "$root/scripts/cluster-mpiexec.sh" 2 2 "$app" train \
  "$inputs/tiny.yaml" train.steps=100000 train.micro_batch=8 parallel.t=2 parallel.d=2 output.log_every=1 \
  checkpoint.dir="$work/ck" output.report="$work/never.json" > job.log 2>&1 &
job=$!
t0=$SECONDS
until grep -qE '^step +3/' job.log; do
  ((SECONDS - t0 < 90)) || { kill -KILL -- "-$job"; tail -n 5 job.log; fail "the job did not reach step 3 in 90 s"; }
  sleep 0.2
done
kill -KILL "$job"  # mpiexec only: its proxies then end their ranks, as they should
wait "$job" 2>/dev/null
# What a test that died half-way leaves behind: a process in each host, in its own session.
for h in "${HOSTS[@]}"; do setsid "$root/scripts/cluster-enter.sh" "$h" sleep 600 > /dev/null 2>&1 & done
sleep 0.5
strays=$(for h in "${HOSTS[@]}"; do ip netns pids "$h"; done | tr '\n' ' ')
(($(wc -w <<<"$strays") >= ${#HOSTS[@]})) || fail "the stray processes did not start in the hosts"

stop || { cat stop.log; fail "stop-cluster.sh exited non-zero"; }
trap - EXIT
cat stop.log
problems=()
[[ -z $(ip netns list | grep '^m5dc-') ]] || problems+=("namespaces: $(ip netns list | grep '^m5dc-' | tr '\n' ' ')")
[[ -z $(ip -o link show | grep -E ': m5dc-') ]] || problems+=("links: $(ip -o link show | grep -oE 'm5dc-[a-z0-9-]+' | tr '\n' ' ')")
[[ -z $(tc qdisc show | grep -E 'dev m5dc-') ]] || problems+=("qdiscs on m5dc-* links")
mounts=$(awk -v d="$MINI5D_CLUSTER_DIR" 'index($2, d) == 1 {print $2}' /proc/self/mounts)
[[ -z $mounts ]] || problems+=("mounts: $mounts")
[[ ! -e $MINI5D_CLUSTER_DIR/made && ! -e $MINI5D_CLUSTER_DIR/ns ]] || problems+=("state: $(ls "$MINI5D_CLUSTER_DIR")")
procs=$(pgrep -f -- "checkpoint.dir=$work/ck" | tr '\n' ' ')
for p in $strays; do  # a process that ended but was not reaped yet (a zombie) is gone
  [[ -e /proc/$p && $(awk '{print $3}' "/proc/$p/stat" 2>/dev/null) != Z ]] && procs+="$p "
done
[[ -z $procs ]] || problems+=("processes: $procs")
((${#problems[@]} == 0)) || fail "left behind: ${problems[*]}"
now=$(ip netns list 2>/dev/null | awk '$1 !~ /^m5dc-/ {print $1}' | sort | tr '\n' ' ')
[[ $now == "$others" ]] || fail "other namespaces changed: '$others' before, '$now' after"
echo "PASS: nothing of the killed job's cluster is left; other namespaces untouched (${others:-none})"
