#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Starts a two-tier test cluster on this machine for the `cluster` tests: N test hosts
# (N = 2 or 4), each a set of Linux namespaces with its own host name (UTS), its own
# network (one veth, eth0, on a private bridge), its own System V IPC and its own
# /dev/shm and /sys (a mount namespace). The filesystem is otherwise this machine's, so
# checkpoints written on one host are visible on all, as on a parallel file system.
#
# Why the separate IPC and /dev/shm: MPICH's UCX finds peers it can reach through shared
# memory by the machine they run on, and all hosts here run on one kernel. With their
# own IPC objects and /dev/shm the hosts' ranks cannot map each other's segments, so
# UCX sends between hosts over TCP on eth0 (the shaped link) while ranks on one host
# keep shared memory. tests/cluster/paths.sh measures which path each pair takes.
#
# The link: each host's eth0 sends through a token-bucket filter (tc tbf; netem is not
# in every kernel) at the inter-node bandwidth of the testbed's cluster file
# (MINI5D_CLUSTER_FILE, default inputs/clusters/testbed-2tier.yaml). Addresses are
# NET.1 .. NET.N on the hosts and NET.254 on the bridge (MINI5D_CLUSTER_NET, a /24 in
# 198.18.0.0/15, the range reserved for benchmarking); the hosts have no default route,
# so nothing leaves the bridge.
#
# State lives in MINI5D_CLUSTER_DIR (default /tmp/mini5d-cluster): `hosts` (one
# "name address" line per host), `made` (every object created, in order, which
# scripts/stop-cluster.sh removes in reverse and nothing else), `rate` (the link rate in
# bytes/s), `measured` and `status` ("up", "failed: WHY" or "unsupported: WHY"). Names
# start with MINI5D_CLUSTER_NAME (default m5d): bridge NAME-br, hosts NAME-h1 ...
#
# Exit status: 0 up (or already up), 1 failed, 3 this machine cannot make the
# namespaces (not root, a tool missing, no permission): the tests skip on 3.
# Usage: scripts/start-cluster.sh [N]
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-2}
dir=${MINI5D_CLUSTER_DIR:-/tmp/mini5d-cluster}
name=${MINI5D_CLUSTER_NAME:-m5d}
net=${MINI5D_CLUSTER_NET:-198.18.0}
file=${MINI5D_CLUSTER_FILE:-$root/inputs/clusters/testbed-2tier.yaml}

say() { echo "start-cluster: $*" >&2; }
unsupported() {
  mkdir -p "$dir" 2>/dev/null && echo "unsupported: $*" > "$dir/status"
  say "cannot make test hosts here: $*"
  exit 3
}
fail() {  # record the reason, undo what was made, exit 1
  echo "failed: $*" > "$dir/status"
  say "$*"
  MINI5D_CLUSTER_DIR=$dir "$root/scripts/stop-cluster.sh" > /dev/null 2>&1
  echo "failed: $*" > "$dir/status"
  exit 1
}
made() { echo "$*" >> "$dir/made"; }
in_host() {  # in_host HOST CMD...: run CMD inside test host HOST
  local h=$1
  shift
  nsenter --net="/run/netns/$h" --uts="$dir/ns/$h.uts" --ipc="$dir/ns/$h.ipc" --mount="$dir/ns/$h.mnt" "$@"
}

[[ $n == 2 || $n == 4 ]] || { say "N must be 2 or 4, not '$n'"; exit 2; }
[[ $net =~ ^198\.(18|19)\.[0-9]{1,3}$ ]] ||
  { say "MINI5D_CLUSTER_NET=$net: must be the first three numbers of a /24 in 198.18.0.0/15"; exit 2; }
[[ $name =~ ^[a-z][a-z0-9]{0,5}$ ]] ||
  { say "MINI5D_CLUSTER_NAME=$name: 1-6 lower-case letters or digits (interface names are short)"; exit 2; }
[[ -r $file ]] || { say "cluster file $file not found (MINI5D_CLUSTER_FILE)"; exit 2; }
# The link rate: links.inter_node.bandwidth_gbs of the cluster file, in GB/s.
gbs=$(awk '/^  inter_node:/ {on = 1; next} on && /^  [a-z]/ {on = 0} on && /bandwidth_gbs:/ {print $2; exit}' "$file")
[[ $gbs =~ ^[0-9]*\.?[0-9]+$ ]] || { say "$file: no links.inter_node.bandwidth_gbs"; exit 2; }
rate=$(awk -v g="$gbs" 'BEGIN {printf "%d", g * 1e9}')

if [[ -s $dir/status && $(cat "$dir/status") == up ]] && ip netns list 2>/dev/null | grep -q "^$name-h1\b"; then
  say "already running ($dir)"
  exit 0
fi
[[ $(id -u) -eq 0 ]] || unsupported "must run as root (network namespaces, veth, tc)"
for tool in ip tc nsenter unshare python3; do
  command -v "$tool" > /dev/null || unsupported "$tool not found (scripts/setup-debian.sh installs it)"
done
if [[ -e $dir/made ]]; then fail "$dir/made exists: a cluster of an earlier start is left; run scripts/stop-cluster.sh"; fi
mkdir -p "$dir/ns" || fail "cannot create $dir"
rm -f "$dir/status" "$dir/hosts" "$dir/measured"
: > "$dir/made"
echo "$rate" > "$dir/rate"
# Can this machine make a network namespace at all? If not, skip rather than fail.
if ! ip netns add "$name-probe" 2> "$dir/probe.err"; then
  rm -f "$dir/made"
  unsupported "ip netns add: $(head -n 1 "$dir/probe.err")"
fi
ip netns del "$name-probe"
if ! unshare --uts --ipc --mount true 2> "$dir/probe.err"; then
  rm -f "$dir/made"
  unsupported "unshare --uts --ipc --mount: $(head -n 1 "$dir/probe.err")"
fi

# The namespace files need a private mount to live on (the kernel refuses a mount
# namespace bound where it could propagate into itself).
mount --bind "$dir/ns" "$dir/ns" && mount --make-private "$dir/ns" || fail "cannot bind-mount $dir/ns"
made mount "$dir/ns"
ip link add "$name-br" type bridge || fail "ip link add $name-br type bridge"
made link "$name-br"
ip addr add "$net.254/24" dev "$name-br" && ip link set "$name-br" up || fail "cannot address $name-br"
# Bursts above one timer tick of data are what tbf needs to reach the rate; 64 KiB at least
# (one GSO segment).
burst=$(((rate / 250 > 65536) ? rate / 250 : 65536))
if [[ $(stat -fc %T /sys/fs/cgroup 2>/dev/null) == cgroup2fs ]]; then
  cgroup_mount="mount -t cgroup2 $name-cgroup /sys/fs/cgroup"
else
  cgroup_mount="mount -t tmpfs -o mode=755,size=1m $name-cgroup /sys/fs/cgroup"
fi
for ((i = 1; i <= n; ++i)); do
  h=$name-h$i
  ip netns add "$h" || fail "ip netns add $h"
  made netns "$h"
  ip link add "$h" type veth peer name eth0 netns "$h" || fail "ip link add $h (veth)"
  made link "$h"
  ip link set "$h" master "$name-br" up &&
    ip -n "$h" addr add "$net.$i/24" dev eth0 && ip -n "$h" link set eth0 up && ip -n "$h" link set lo up ||
    fail "cannot wire $h to $name-br"
  ip netns exec "$h" tc qdisc add dev eth0 root tbf rate "${rate}bps" burst "$burst" latency 50ms ||
    fail "tc tbf on $h's eth0 failed"
  for t in uts ipc mnt; do : > "$dir/ns/$h.$t" && made nsfile "$dir/ns/$h.$t"; done
  # The host's own name, IPC, /dev/shm and /sys (showing its eth0, which UCX lists), and
  # at /sys/fs/cgroup what a slurmd of start-slurm.sh --cluster checks for at start: an
  # empty tmpfs where it mounts the v1 controllers, or on a cgroup-v2-only machine the
  # unified hierarchy.
  nsenter --net="/run/netns/$h" unshare --uts="$dir/ns/$h.uts" --ipc="$dir/ns/$h.ipc" \
    --mount="$dir/ns/$h.mnt" --propagation private sh -c \
    "hostname $h && mount -t tmpfs -o mode=1777,size=50% $name-shm /dev/shm && mount -t sysfs sysfs /sys &&
     $cgroup_mount && umount -l '$dir/ns'" 2> "$dir/probe.err" || fail "cannot make $h's namespaces: $(head -n 1 "$dir/probe.err")"
  echo "$h $net.$i" >> "$dir/hosts"
done
rm -f "$dir/probe.err"

# Measure both tiers: the link between two hosts (a TCP stream, 2 s) and a copy through
# one host's /dev/shm. The link must be at least 10x slower, or it is no second tier.
link=$("$root/scripts/cluster-link-rate.sh" "$name-h2" "$name-h1" 2) || fail "link measurement failed: $link"
shm=$(in_host "$name-h1" python3 "$root/scripts/cluster_rates.py" shm) || fail "shm measurement failed: $shm"
ratio=$(awk -v a="$shm" -v b="$link" 'BEGIN {printf "%.1f", a / b}')
echo "link_bytes_per_s $link shm_bytes_per_s $shm ratio $ratio" > "$dir/measured"
say "$n hosts ($(cut -d' ' -f1 "$dir/hosts" | tr '\n' ' ')) on $name-br $net.0/24; link shaped to $((rate / 1000000)) MB/s," \
  "measured $((link / 1000000)) MB/s; shared memory in a host $((shm / 1000000)) MB/s (${ratio}x)"
awk -v r="$ratio" 'BEGIN {exit !(r >= 10)}' || fail "the link is only ${ratio}x slower than shared memory (want >= 10x)"
echo up > "$dir/status"
