#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# mpiexec across the test hosts of scripts/start-cluster.sh: PPN ranks on each of the
# first HOSTS hosts, consecutive ranks on one host (block mapping, as srun
# --distribution=block), started by Hydra through scripts/cluster-enter.sh, with the
# control traffic on the cluster's bridge. MINI5D_CLUSTER_MAP=cyclic deals the ranks out
# one per host in turn instead (rank r on host r mod HOSTS), which puts the fastest axis
# of the grid across hosts: the placement the benchmarks compare against.
# The ranks get scripts/ucx-finalize-progress.c preloaded (built once into the cluster's
# directory): it keeps UCX progressing during MPI_Finalize's PMI barrier, without which
# MPICH 4.0.2 over UCX 1.13's TCP often hangs there (docs/two-tier-cluster.md).
# MINI5D_CLUSTER_FINALIZE_FIX=0 leaves it out (to measure the hang).
# usage: scripts/cluster-mpiexec.sh HOSTS PPN CMD [ARG ...]   (MINI5D_CLUSTER_DIR: the cluster)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${MINI5D_CLUSTER_DIR:-/tmp/mini5d-cluster}
(($# >= 3)) && [[ $1 =~ ^[1-9][0-9]*$ && $2 =~ ^[1-9][0-9]*$ ]] ||
  { echo "usage: cluster-mpiexec.sh HOSTS PPN CMD [ARG ...]" >&2; exit 2; }
hosts=$1 ppn=$2
shift 2
[[ $(cat "$dir/status" 2>/dev/null) == up ]] ||
  { echo "cluster-mpiexec: the test cluster in $dir is not up (scripts/start-cluster.sh)" >&2; exit 2; }
mapfile -t addrs < <(awk '{print $2}' "$dir/hosts")
((hosts <= ${#addrs[@]})) || { echo "cluster-mpiexec: $hosts hosts asked, the cluster has ${#addrs[@]}" >&2; exit 2; }
case ${MINI5D_CLUSTER_MAP:-block} in
  block) slots=$ppn ;;
  cyclic) slots=1 ;;  # Hydra fills each host's one slot, then wraps around the list
  *) echo "cluster-mpiexec: MINI5D_CLUSTER_MAP=$MINI5D_CLUSTER_MAP: block or cyclic" >&2; exit 2 ;;
esac
list=$(printf "%s:$slots," "${addrs[@]:0:hosts}")
bridge=$(awk '$1 == "link" && $2 ~ /-br$/ {print $2}' "$dir/made")
preload=()
if [[ ${MINI5D_CLUSTER_FINALIZE_FIX:-1} != 0 ]]; then
  src=$here/ucx-finalize-progress.c
  lib=$dir/ucx-finalize-progress.$(cksum < "$src" | cut -d' ' -f1).so  # one per version of the source
  if [[ ! -s $lib ]]; then
    tmp=$(mktemp "$dir/.ucx-finalize-progress.XXXXXX")
    if ! { ${CC:-cc} -std=c11 -O2 -shared -fPIC -o "$tmp" "$src" -ldl && mv -f "$tmp" "$lib"; }; then
      rm -f "$tmp"
      echo "cluster-mpiexec: cannot build $lib (${CC:-cc}, ucp/api/ucp.h from libucx-dev)" >&2
      exit 2
    fi
  fi
  preload=(-genv LD_PRELOAD "$lib${LD_PRELOAD:+:$LD_PRELOAD}")
fi
exec mpiexec -launcher rsh -launcher-exec "$here/cluster-enter.sh" -iface "$bridge" -hosts "${list%,}" \
  "${preload[@]}" -n $((hosts * ppn)) "$@"
