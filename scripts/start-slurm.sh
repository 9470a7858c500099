#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Starts a real one-node Slurm on this host for the `slurm` tests: munged, slurmctld and
# slurmd, with a minimal configuration that works inside a container (no cgroups, no
# accounting database), then waits until the node is idle.
#
# Everything lives in one state directory (MINI5D_SLURM_DIR, default /tmp/mini5d-slurm):
# slurm.conf, the daemons' logs, pid files and spool, and `status`, whose one line is
# "up" or "failed: <the daemon's log line>"; the tests read it, so a daemon that did not
# start fails them with its reason instead of leaving sbatch waiting. Point Slurm's
# commands at the cluster with SLURM_CONF=$MINI5D_SLURM_DIR/slurm.conf.
# scripts/stop-slurm.sh stops exactly the daemons this script started (by their pid files).
#
# With --cluster, the same Slurm across the test hosts of scripts/start-cluster.sh
# (MINI5D_CLUSTER_DIR): one slurmd inside each host (its network, name, IPC and mounts,
# entered with scripts/cluster-enter.sh), each its own node at the host's address, and
# slurmctld and munged on this machine, reached over the bridge. Its state directory
# defaults to the cluster's slurm/ and its ports to 6827/6828, so it can run beside the
# one-node Slurm; the slurmds' pid and log files are slurmd-HOST.pid and slurmd-HOST.log.
# A slurmd that cannot start inside a host of a cgroup-v2-only machine (untested: this
# machine's hierarchy is v1) makes it exit 3 with status "unsupported: ...", which the
# cluster's Slurm fixture reports as a skip.
#
# Usage: scripts/start-slurm.sh [--cluster]   (as root; installs slurm-wlm and munge if missing)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cluster_dir=
if [[ ${1:-} == --cluster ]]; then
  cluster_dir=${MINI5D_CLUSTER_DIR:-/tmp/mini5d-cluster}
elif (($#)); then
  echo "usage: scripts/start-slurm.sh [--cluster]" >&2
  exit 2
fi
dir=${MINI5D_SLURM_DIR:-${cluster_dir:+$cluster_dir/slurm}}
dir=${dir:-/tmp/mini5d-slurm}
wait_s=${MINI5D_SLURM_WAIT:-30}
port=${MINI5D_SLURM_PORT:-$([[ -n $cluster_dir ]] && echo 6827 || echo 6817)}  # slurmctld's; slurmd takes the next one

fail() {  # fail WHY: record and print the reason, stop what did start, exit non-zero
  echo "failed: $*" > "$dir/status"
  echo "start-slurm: $*" >&2
  MINI5D_SLURM_DIR=$dir "$root/scripts/stop-slurm.sh" > /dev/null
  exit 1
}
# The process in pid file $1 runs and is not a zombie (a daemon that died can linger
# as one when nothing reaps it in a container).
alive() {
  local pid state
  pid=$(cat "$1" 2>/dev/null) && [[ $pid =~ ^[0-9]+$ ]] || return 1
  state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)
  [[ -n $state && $state != Z ]]
}
port_taken() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# What to show when a daemon did not come up: the last fatal line of its log, else the
# last error line, else its last line. slurmd (22.05) loads every MPI plugin at start and
# logs errors for the PMIx ones, whose library Debian does not install; they are harmless
# here (MpiDefault=pmi2), so they never stand in for the reason. A daemon that logged no
# error was stopped from outside (its last line then says so: "shutdown").
log_line() {
  local lines
  lines=$(grep -hv -E 'pmix|Cannot create context for mpi/' "$@" 2>/dev/null)
  grep -iE 'fatal' <<< "$lines" | tail -n 1 | grep . ||
    grep -iE 'error' <<< "$lines" | tail -n 1 | grep . ||
    tail -n 1 <<< "$lines"
}

mkdir -p "$dir" || { echo "start-slurm: cannot create $dir" >&2; exit 1; }
chmod 0755 "$dir"
# The nodes: this host, or the test hosts ("name address" lines of the cluster's hosts).
if [[ -n $cluster_dir ]]; then
  [[ $(cat "$cluster_dir/status" 2>/dev/null) == up ]] ||
    { echo "start-slurm: the test cluster in $cluster_dir is not up (scripts/start-cluster.sh)" >&2; exit 1; }
  mapfile -t nodes < <(awk '{print $1}' "$cluster_dir/hosts")
  mapfile -t addrs < <(awk '{print $2}' "$cluster_dir/hosts")
  ctl_addr=$(awk '{sub(/\.[0-9]+$/, ".254", $2); print $2; exit}' "$cluster_dir/hosts")  # the bridge
  slurmds=()
  for n in "${nodes[@]}"; do slurmds+=("slurmd-$n"); done
else
  nodes=("$(hostname -s)") addrs=(127.0.0.1) ctl_addr=127.0.0.1 slurmds=(slurmd)
fi
daemons=(slurmctld "${slurmds[@]}" munged)
all_alive() { local d; for d in "${daemons[@]}"; do alive "$dir/$d.pid" || return 1; done; }
if all_alive; then
  echo "start-slurm: already running ($dir)"
  exit 0
fi
if [[ $(id -u) -ne 0 ]]; then fail "must run as root (SlurmUser=root, munged on a private socket)"; fi

"$root/scripts/setup-debian.sh" --slurm || fail "could not install slurm-wlm and munge (scripts/setup-debian.sh --slurm)"

# Another Slurm on these ports would answer our sinfo and hide our daemons' failure.
for p in "$port" $((port + 1)); do
  if port_taken "$p"; then fail "port $p is in use (another slurmctld/slurmd? set MINI5D_SLURM_PORT)"; fi
done

rm -rf "$dir/spool" "$dir/state"
mkdir -p "$dir/spool" "$dir/state"
rm -f "$dir"/*.log "$dir/status"

# munge: our own daemon on a private socket, so a system munged (if any) is untouched.
# The package made /etc/munge/munge.key; make one here if it is missing.
key=/etc/munge/munge.key
if [[ ! -s $key ]]; then
  key=$dir/munge.key
  dd if=/dev/urandom of="$key" bs=1024 count=1 status=none && chmod 0400 "$key"
fi
munged --force --socket="$dir/munge.socket" --key-file="$key" --pid-file="$dir/munged.pid" \
  --log-file="$dir/munged.log" --seed-file="$dir/munged.seed" 2>>"$dir/munged.log" ||
  fail "munged did not start: $(log_line "$dir/munged.log")"

# Each node: all its CPUs, memory as slurmd measures it (inside the test host with --cluster).
in_node() { if [[ -n $cluster_dir ]]; then "$root/scripts/cluster-enter.sh" "$1" "${@:2}"; else "${@:2}"; fi; }
host=$(hostname -s)
node_lines=
for i in "${!nodes[@]}"; do
  line=$(in_node "${nodes[$i]}" slurmd -C 2>/dev/null | head -n 1)
  [[ $line == "NodeName=${nodes[$i]} "* ]] || fail "slurmd -C did not describe node ${nodes[$i]}: '$line'"
  node_lines+="$line State=UNKNOWN NodeAddr=${addrs[$i]}"$'\n'
done
node_list=$(IFS=,; echo "${nodes[*]}")
slurmd_timeout="# SlurmdTimeout: the default (300 s)"
if [[ -n $cluster_dir ]]; then
  # A host that stops answering is DOWN after 10 s, so a job that lost it ends while a
  # test waits (the one-node Slurm keeps the default: its slurmd shares 2 busy cores).
  slurmd_timeout="SlurmdTimeout=10"
  slurmd_files="SlurmdPidFile=$dir/slurmd-%n.pid
SlurmdLogFile=$dir/slurmd-%n.log
SlurmdSpoolDir=$dir/spool/%n"
else
  slurmd_files="SlurmdPidFile=$dir/slurmd.pid
SlurmdLogFile=$dir/slurmd.log
SlurmdSpoolDir=$dir/spool"
fi
cat > "$dir/slurm.conf" <<EOF
# Written by scripts/start-slurm.sh: a test cluster of ${#nodes[@]} node(s) ($node_list).
ClusterName=mini5d
SlurmctldHost=$host($ctl_addr)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge.socket
SlurmctldPort=$port
SlurmdPort=$((port + 1))
StateSaveLocation=$dir/state
SlurmctldPidFile=$dir/slurmctld.pid
SlurmctldLogFile=$dir/slurmctld.log
$slurmd_files
SlurmctldDebug=info
SlurmdDebug=info
# No cgroups in a container: track processes through /proc, bind nothing.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
# Debian's MPICH talks PMI-2 to srun.
MpiDefault=pmi2
# No slurmdbd: sacct reads the job completion log instead (sacct --completion).
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/jobcomp.log
# Short waits, so the tests stay quick: SIGTERM to SIGKILL, and finished jobs are kept
# for scontrol for 10 minutes.
KillWait=5
$slurmd_timeout
MinJobAge=600
ReturnToService=2
SchedulerType=sched/backfill
${node_lines%$'\n'}
PartitionName=debug Nodes=$node_list Default=YES MaxTime=INFINITE State=UP
EOF
# The test hosts have their own sysfs, and slurmd 22.05 initialises its cgroup plugin even
# with nothing to track. On a v1 (or hybrid) machine it mounts the v1 controllers it wants
# on the tmpfs start-cluster.sh leaves at the host's /sys/fs/cgroup; on a v2-only machine
# start-cluster.sh mounts cgroup2 there and slurmd runs without systemd.
cgroup_v2_only=$([[ $(stat -fc %T /sys/fs/cgroup 2>/dev/null) == cgroup2fs ]] && echo 1)
if [[ -n $cluster_dir && -n $cgroup_v2_only ]]; then
  printf 'CgroupPlugin=cgroup/v2\nIgnoreSystemd=yes\n' > "$dir/cgroup.conf"
elif [[ -n $cluster_dir ]]; then
  printf 'CgroupPlugin=cgroup/v1\nCgroupAutomount=yes\n' > "$dir/cgroup.conf"
else
  rm -f "$dir/cgroup.conf"
fi
export SLURM_CONF=$dir/slurm.conf

slurmctld -f "$SLURM_CONF" -i 2>>"$dir/slurmctld.log" || fail "slurmctld did not start: $(log_line "$dir/slurmctld.log")"
for i in "${!nodes[@]}"; do
  mkdir -p "$dir/spool/${nodes[$i]}"
  if ! in_node "${nodes[$i]}" slurmd -f "$SLURM_CONF" -N "${nodes[$i]}" 2>>"$dir/${slurmds[$i]}.log"; then
    why="slurmd on ${nodes[$i]} did not start: $(log_line "$dir/${slurmds[$i]}.log")"
    if [[ -n $cluster_dir && -n $cgroup_v2_only ]]; then
      MINI5D_SLURM_DIR=$dir "$root/scripts/stop-slurm.sh" > /dev/null
      echo "unsupported: $why (a cgroup-v2-only machine)" > "$dir/status"
      echo "start-slurm: unsupported: $why (a cgroup-v2-only machine)" >&2
      exit 3
    fi
    fail "$why"
  fi
done

# Wait for every node to be idle; a daemon that died says why in its log.
for ((i = 0; i < wait_s * 4; ++i)); do
  for d in "${daemons[@]}"; do
    if [[ -f $dir/$d.pid ]] && ! alive "$dir/$d.pid"; then fail "$d exited: $(log_line "$dir/$d.log")"; fi
  done
  states=$(timeout 5 sinfo -h -N -n "$node_list" -o %T 2>/dev/null | sort -u | tr '\n' ' ')
  if [[ $states == "idle " ]] && [[ $(timeout 5 sinfo -h -N -n "$node_list" -o %N | wc -l) -eq ${#nodes[@]} ]] && all_alive; then
    echo up > "$dir/status"
    echo "start-slurm: ${#nodes[@]} node(s) idle: $node_list (SLURM_CONF=$SLURM_CONF)"
    exit 0
  fi
  sleep 0.25
done
fail "nodes $node_list not idle after ${wait_s}s (states '${states:-no answer}'): $(log_line "$dir"/slurmctld.log "$dir"/slurmd*.log)"
