#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The test Slurm as a CTest fixture: `start` (test slurm_start, FIXTURES_SETUP slurm)
# runs scripts/start-slurm.sh before the tests that need it, and `stop` (slurm_stop,
# FIXTURES_CLEANUP slurm) stops it after them, pass or fail. A Slurm that was already
# running belongs to whoever started it and is left alone: `start` records in MARKER
# the daemons' pids only when it started them itself, and `stop` stops the daemons only
# while their pid files still name those pids.
# With --cluster after REPO_ROOT it is the Slurm across the test hosts (start-slurm.sh
# --cluster, one slurmd per host).
# usage: fixture.sh start|stop MARKER REPO_ROOT [--cluster]   (MINI5D_SLURM_DIR: the state folder)
set -u
action=$1 marker=$2 root=$3
shift 3
dir=${MINI5D_SLURM_DIR:-/tmp/mini5d-slurm}
export MINI5D_SLURM_DIR=$dir

# The controller's and munged's pids name the Slurm (a test may restart a slurmd: the
# node-loss test brings its lost host back).
pids() { cat "$dir/slurmctld.pid" "$dir/munged.pid" 2>/dev/null | tr '\n' ' '; }
# The marker of an earlier run that stopped before its slurm_stop, for the same daemons.
ours() { [[ -s $marker && $(cat "$marker") == "$(pids)" ]]; }

case $action in
  start)
    # The Slurm across the test hosts needs them; where they cannot be made, skip (77).
    if [[ ${1:-} == --cluster && $(cat "${MINI5D_CLUSTER_DIR:-/tmp/mini5d-cluster}/status" 2>/dev/null) == unsupported:* ]]; then
      echo "SKIP: no test cluster here, so no Slurm across it: $(cat "${MINI5D_CLUSTER_DIR:-/tmp/mini5d-cluster}/status")"
      exit 77
    fi
    out=$("$root/scripts/start-slurm.sh" "$@" 2>&1)
    rc=$?
    echo "$out"
    if ((rc == 3)); then  # --cluster on a machine whose test hosts cannot run slurmd
      rm -f "$marker"
      echo "SKIP: no Slurm across the test hosts here: $(cat "$dir/status" 2>/dev/null)"
      exit 77
    fi
    if ((rc != 0)); then
      rm -f "$marker"
      echo "FAIL: the test Slurm did not start: $(cat "$dir/status" 2>/dev/null)"
      exit 1
    fi
    if [[ $out == *"already running"* ]]; then
      if ours; then
        echo "slurm_start: still the Slurm an earlier slurm_start started; slurm_stop stops it"
      else
        rm -f "$marker"
        echo "slurm_start: a Slurm someone else started; slurm_stop leaves it running"
      fi
    else
      mkdir -p "$(dirname "$marker")" && pids > "$marker" || exit 1
    fi
    ;;
  stop)
    if ! ours; then
      echo "slurm_stop: nothing to stop (slurm_start did not start the Slurm in $dir)"
      rm -f "$marker"
      exit 0
    fi
    rm -f "$marker"
    exec "$root/scripts/stop-slurm.sh"
    ;;
  *)
    echo "usage: fixture.sh start|stop MARKER REPO_ROOT [--cluster]" >&2
    exit 2
    ;;
esac
