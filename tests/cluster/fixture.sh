#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The test cluster as a CTest fixture: `start` (test cluster_start, FIXTURES_SETUP
# cluster) runs scripts/start-cluster.sh before the tests that need it, and `stop`
# (cluster_stop, FIXTURES_CLEANUP cluster) stops it after them, pass or fail, and fails
# if anything of it is left. A cluster that was already up belongs to whoever started
# it and is left alone: `start` writes MARKER only when it started the cluster itself.
# Where this machine cannot make namespaces, `start` skips (exit 77) with the reason,
# and so does every test that needs the cluster.
# usage: fixture.sh start|stop MARKER REPO_ROOT   (MINI5D_CLUSTER_DIR: the state folder)
set -u
action=$1 marker=$2 root=$3
dir=${MINI5D_CLUSTER_DIR:-/tmp/mini5d-cluster}
export MINI5D_CLUSTER_DIR=$dir

case $action in
  start)
    out=$("$root/scripts/start-cluster.sh" 2 2>&1)
    rc=$?
    echo "$out"
    rm -f "$marker"
    case $rc in
      0) if [[ $out == *"already running"* ]]; then
           echo "cluster_start: a test cluster someone else started; cluster_stop leaves it up"
         else
           mkdir -p "$(dirname "$marker")" && cp "$dir/made" "$marker" || exit 1
         fi ;;
      3) echo "SKIP: the test cluster cannot be made here: $(cat "$dir/status" 2>/dev/null)"
         exit 77 ;;
      *) echo "FAIL: the test cluster did not start: $(cat "$dir/status" 2>/dev/null)"
         exit 1 ;;
    esac
    ;;
  stop)
    if [[ ! -s $marker ]] || ! cmp -s "$marker" "$dir/made"; then
      echo "cluster_stop: nothing to stop (cluster_start did not start the cluster in $dir)"
      rm -f "$marker"
      exit 0
    fi
    rm -f "$marker"
    exec "$root/scripts/stop-cluster.sh"
    ;;
  *)
    echo "usage: fixture.sh start|stop MARKER REPO_ROOT" >&2
    exit 2
    ;;
esac
