#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Stops the test cluster of scripts/start-cluster.sh, and only it: the objects listed in
# MINI5D_CLUSTER_DIR/made (namespaces, links, namespace files, mounts), removed in
# reverse order, after ending every process still inside its hosts (ranks and proxies
# of a job that failed half-way). It then checks that none of them is left and exits 1,
# naming each, if one is.
# Usage: scripts/stop-cluster.sh
set -uo pipefail
dir=${MINI5D_CLUSTER_DIR:-/tmp/mini5d-cluster}
[[ -s $dir/made ]] || { echo "stop-cluster: nothing to stop ($dir/made is empty or missing)"; exit 0; }
mapfile -t objects < <(tac "$dir/made")

netns_of() { for o in "${objects[@]}"; do [[ $o == netns\ * ]] && echo "${o#netns }"; done; }
inside() { for h in $(netns_of); do ip netns pids "$h" 2>/dev/null; done; }
present() {  # present KIND WHAT: the object still exists
  case $1 in
    netns) ip netns list | grep -q "^$2\b" ;;
    link) ip link show "$2" > /dev/null 2>&1 ;;
    nsfile | mount) mountpoint -q "$2" ;;
  esac
}

# A Slurm across the hosts (scripts/start-slurm.sh --cluster) first: its controller and
# munged run outside them, and its jobs are cancelled rather than killed.
if [[ -f $dir/slurm/slurm.conf ]]; then
  MINI5D_SLURM_DIR=$dir/slurm "$(dirname "$0")/stop-slurm.sh" | sed 's/^/stop-cluster: /'
fi
# Processes first: a namespace with a process in it outlives its name.
pids=$(inside | sort -u | tr '\n' ' ')
if [[ -n ${pids// /} ]]; then
  echo "stop-cluster: ending processes left in the test hosts: $pids"
  kill -TERM $pids 2>/dev/null
  for _ in $(seq 1 20); do [[ -z $(inside) ]] && break; sleep 0.25; done
  pids=$(inside | tr '\n' ' ')
  [[ -n ${pids// /} ]] && kill -KILL $pids 2>/dev/null && sleep 0.5
fi
for o in "${objects[@]}"; do
  kind=${o%% *} what=${o#* }
  present "$kind" "$what" || continue
  case $kind in
    netns) ip netns del "$what" ;;
    link) ip link del "$what" ;;
    nsfile) umount "$what" && rm -f "$what" ;;
    mount) umount "$what" ;;
    *) echo "stop-cluster: unknown entry '$o' in $dir/made" ;;
  esac
done
left=()
for o in "${objects[@]}"; do present "${o%% *}" "${o#* }" && left+=("$o"); done
[[ -n $(inside) ]] && left+=("processes $(inside | tr '\n' ' ')")
if ((${#left[@]})); then
  printf 'stop-cluster: still present: %s\n' "${left[@]}"
  exit 1
fi
rm -f "$dir/made" "$dir/hosts"
rm -rf "$dir/ns"
grep -qE '^(failed|unsupported):' "$dir/status" 2>/dev/null || echo stopped > "$dir/status"
echo "stop-cluster: stopped (${#objects[@]} objects removed)"
