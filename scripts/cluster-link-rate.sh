#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The rate of one TCP stream from test host FROM to test host TO over the shaped link
# (scripts/start-cluster.sh), in bytes/s on stdout, as TO received it.
# usage: scripts/cluster-link-rate.sh TO FROM SECONDS     (MINI5D_CLUSTER_DIR: the cluster)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${MINI5D_CLUSTER_DIR:-/tmp/mini5d-cluster}
(($# == 3)) || { echo "usage: cluster-link-rate.sh TO FROM SECONDS" >&2; exit 2; }
to=$1 from=$2 seconds=$3
addr=$(awk -v h="$to" '$1 == h {print $2}' "$dir/hosts" 2>/dev/null)
[[ -n $addr ]] || { echo "cluster-link-rate: no test host '$to' in $dir/hosts" >&2; exit 2; }
port=$((20000 + RANDOM % 20000))
out=$(mktemp)
timeout 60 "$here/cluster-enter.sh" "$to" python3 "$here/cluster_rates.py" serve "$port" > "$out" &
server=$!
timeout 60 "$here/cluster-enter.sh" "$from" python3 "$here/cluster_rates.py" send "$addr" "$port" "$seconds"
sent=$?
wait "$server"
got=$?
rate=$(cat "$out")
rm -f "$out"
((sent == 0 && got == 0)) && [[ $rate =~ ^[0-9]+$ ]] || { echo "cluster-link-rate: $from -> $to failed" >&2; exit 1; }
echo "$rate"
