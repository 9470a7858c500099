#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs a command inside one test host of scripts/start-cluster.sh: its network, host
# name, IPC and mount namespaces. HOST is its name (m5d-h1) or address (198.18.0.1).
# Like rsh and ssh, it joins the words after HOST and runs them with sh: MPICH Hydra uses
# it as its bootstrap (mpiexec -launcher rsh -launcher-exec THIS), and passes the proxy's
# command line quoted for a remote shell.
# usage: scripts/cluster-enter.sh HOST CMD [ARG ...]      (MINI5D_CLUSTER_DIR: the cluster)
set -uo pipefail
dir=${MINI5D_CLUSTER_DIR:-/tmp/mini5d-cluster}
(($# >= 2)) || { echo "usage: cluster-enter.sh HOST CMD [ARG ...]" >&2; exit 2; }
h=$(awk -v h="$1" '$1 == h || $2 == h {print $1}' "$dir/hosts" 2>/dev/null)
[[ -n $h ]] || { echo "cluster-enter: no test host '$1' in $dir/hosts (scripts/start-cluster.sh)" >&2; exit 2; }
shift
exec nsenter --net="/run/netns/$h" --uts="$dir/ns/$h.uts" --ipc="$dir/ns/$h.ipc" --mount="$dir/ns/$h.mnt" \
  --wd="$PWD" sh -c "$*"
