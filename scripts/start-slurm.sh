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
# Usage: scripts/start-slurm.sh        (as root; installs slurm-wlm and munge if missing)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${MINI5D_SLURM_DIR:-/tmp/mini5d-slurm}
wait_s=${MINI5D_SLURM_WAIT:-30}
port=${MINI5D_SLURM_PORT:-6817}  # slurmctld's; slurmd takes the next one

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
if alive "$dir/slurmctld.pid" && alive "$dir/slurmd.pid" && alive "$dir/munged.pid"; then
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

# One node: this host, all its CPUs, memory as slurmd measures it.
host=$(hostname -s)
node_line=$(slurmd -C 2>/dev/null | head -n 1)
[[ $node_line == NodeName=* ]] || fail "slurmd -C did not describe this node: '$node_line'"
cat > "$dir/slurm.conf" <<EOF
# Written by scripts/start-slurm.sh: a one-node test cluster on $host.
ClusterName=mini5d
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge.socket
SlurmctldPort=$port
SlurmdPort=$((port + 1))
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
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
MinJobAge=600
ReturnToService=2
SchedulerType=sched/backfill
$node_line State=UNKNOWN NodeAddr=127.0.0.1
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$dir/slurm.conf

slurmctld -f "$SLURM_CONF" -i 2>>"$dir/slurmctld.log" || fail "slurmctld did not start: $(log_line "$dir/slurmctld.log")"
slurmd -f "$SLURM_CONF" 2>>"$dir/slurmd.log" || fail "slurmd did not start: $(log_line "$dir/slurmd.log")"

# Wait for the node to be idle; a daemon that died says why in its log.
for ((i = 0; i < wait_s * 4; ++i)); do
  for d in slurmctld slurmd munged; do
    if [[ -f $dir/$d.pid ]] && ! alive "$dir/$d.pid"; then fail "$d exited: $(log_line "$dir/$d.log")"; fi
  done
  state=$(timeout 5 sinfo -h -n "$host" -o %T 2>/dev/null)
  if [[ $state == idle ]] && alive "$dir/slurmctld.pid" && alive "$dir/slurmd.pid"; then
    echo up > "$dir/status"
    echo "start-slurm: node $host idle (SLURM_CONF=$SLURM_CONF)"
    exit 0
  fi
  sleep 0.25
done
fail "node $host not idle after ${wait_s}s (state '${state:-no answer}'): $(log_line "$dir"/slurmctld.log "$dir"/slurmd.log)"
