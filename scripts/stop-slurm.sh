#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Stops the daemons scripts/start-slurm.sh started, and only those: each by the pid in
# its pid file under MINI5D_SLURM_DIR, after checking that the process is that daemon.
# Jobs still running are cancelled first so no training process is left behind.
# Usage: scripts/stop-slurm.sh   (MINI5D_SLURM_DIR=<cluster dir>/slurm for start-slurm.sh --cluster)
set -uo pipefail
dir=${MINI5D_SLURM_DIR:-/tmp/mini5d-slurm}
[[ -d $dir ]] || { echo "stop-slurm: nothing to stop ($dir does not exist)"; exit 0; }
export SLURM_CONF=$dir/slurm.conf

# Our daemon's pid, or nothing: the file $1.pid must name a live process running that
# program (slurmd for slurmd-HOST, the test hosts' slurmds of start-slurm.sh --cluster).
our_pid() {
  local f=$dir/$1.pid pid
  [[ -f $f ]] || return 1
  pid=$(cat "$f")
  [[ $pid =~ ^[0-9]+$ ]] && [[ $(cat "/proc/$pid/comm" 2>/dev/null) == "${1%%-*}" ]] && echo "$pid"
}
slurmds=()
for f in "$dir"/slurmd.pid "$dir"/slurmd-*.pid; do [[ -e $f ]] && slurmds+=("$(basename "$f" .pid)"); done
((${#slurmds[@]})) || slurmds=(slurmd)

if our_pid slurmctld >/dev/null; then
  timeout 10 scancel --full --user="$(id -un)" 2>/dev/null
fi
status=0
# slurmd first (it ends its job steps), then the controller, then munge they used.
for d in "${slurmds[@]}" slurmctld munged; do
  pid=$(our_pid "$d") || { echo "stop-slurm: $d not running"; continue; }
  kill -TERM "$pid"
  for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
  if kill -0 "$pid" 2>/dev/null; then
    echo "stop-slurm: $d ($pid) ignored SIGTERM for 10 s; killing it"
    kill -KILL "$pid"
    status=1
  fi
  rm -f "$dir/$d.pid"
  echo "stop-slurm: stopped $d ($pid)"
done
# Keep a start-up failure's reason for the tests; otherwise say it is stopped.
grep -q '^failed:' "$dir/status" 2>/dev/null || echo stopped > "$dir/status"
exit $status
