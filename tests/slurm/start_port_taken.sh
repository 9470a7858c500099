#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# When Slurm cannot start, start-slurm.sh fails at once with the reason
# (exit 1, the line in its status file) and leaves no daemon behind, never waits.
# Here the controller's port is held by another listener.
# usage: start_port_taken.sh WORKDIR REPO_ROOT
set -u
work=$1 root=$2
rm -rf "$work" && mkdir -p "$work" || exit 1
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -c "import socket,time; s=socket.socket(); s.bind(('127.0.0.1', $port)); s.listen(); time.sleep(30)" &
holder=$!
trap 'kill $holder 2>/dev/null' EXIT
for _ in $(seq 1 50); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
t0=$SECONDS
MINI5D_SLURM_DIR=$work/slurm MINI5D_SLURM_PORT=$port MINI5D_SLURM_WAIT=10 "$root/scripts/start-slurm.sh" > "$work/out.txt" 2>&1
rc=$?
status=$(cat "$work/slurm/status" 2>/dev/null)
[[ $rc -ne 0 ]] || { echo "FAIL: start-slurm.sh succeeded with port $port taken"; exit 1; }
[[ $status == "failed: port $port is in use"* ]] || { echo "FAIL: status '$status'"; exit 1; }
((SECONDS - t0 < 15)) || { echo "FAIL: took $((SECONDS - t0)) s"; exit 1; }
for d in munged slurmctld slurmd; do
  [[ -f $work/slurm/$d.pid ]] && { echo "FAIL: $d left running"; exit 1; }
done
echo "ok: start-slurm.sh failed in $((SECONDS - t0)) s: $status"
