#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# start-cluster.sh without root (run as nobody when this is root): exit 3 at once, one
# line saying why, "unsupported: WHY" in the status file (what the fixture turns into a
# CTest skip), and nothing made.
# usage: refuses.sh WORKDIR
source "$(dirname "$0")/common.sh"
(($# == 1)) || { echo "usage: refuses.sh WORKDIR" >&2; exit 2; }
work=$1
rm -rf "$work" && mkdir -p "$work/state" && chmod 0777 "$work" "$work/state" || fail "cannot make $work"
as_user=()
if (($(id -u) == 0)); then
  command -v setpriv > /dev/null || { echo "SKIP: setpriv not found (util-linux)"; exit 77; }
  as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups)
fi
MINI5D_CLUSTER_DIR=$work/state MINI5D_CLUSTER_NAME=m5dr "${as_user[@]}" "$root/scripts/start-cluster.sh" 2 \
  > "$work/out" 2> "$work/err"
rc=$?
((rc == 3)) || fail "exit $rc, expected 3: $(cat "$work/err")"
(($(wc -l < "$work/err") == 1)) || fail "not one line: $(cat "$work/err")"
grep -q '^start-cluster: cannot make test hosts here: must run as root' "$work/err" || fail "$(cat "$work/err")"
grep -q '^unsupported: must run as root' "$work/state/status" || fail "status: $(cat "$work/state/status")"
[[ ! -e $work/state/made ]] || fail "it recorded objects: $(cat "$work/state/made")"
[[ -z $(ip netns list 2>/dev/null | grep '^m5dr-') ]] || fail "it made namespaces"
echo "PASS: $(cat "$work/err")"
