#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A fatal error on every rank under mpiexec gives whole lines, one
# per rank that got to print, never cut off or two in one line, and rank 0's always
# (MINI5D_FAIL=fatal injects the failure right after start-up). Repeated, since the
# failure was a race.
# usage: fatal_lines.sh WORKDIR MPIEXEC NP_FLAG MINI5D_APP DECK
set -u
work=$1 mpiexec=$2 npflag=$3 app=$4 deck=$5
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
msg="fatal: MINI5D_FAIL=fatal: an injected failure on every rank, to test how fatal errors are reported under mpiexec"
for np in 2 4; do
  for try in 1 2 3; do
    # Kokkos' own warnings (an OpenMP Kokkos at 4 ranks on 2 cores warns of
    # oversubscription) are other writers on the same stderr: off, so only mini5d's lines count.
    KOKKOS_DISABLE_WARNINGS=1 MINI5D_FAIL=fatal "$mpiexec" "$npflag" $np "$app" train "$deck" parallel.d=$np train.micro_batch=4 \
      checkpoint.dir=ck$np.$try output.report= > out 2> err
    status=$?
    [[ $status -ne 0 ]] || { echo "FAIL: -n $np: exit status 0"; exit 1; }
    bad=$(grep "mini5d: " err | grep -vxE "mini5d: rank [0-9]+: $msg")
    [[ -z $bad ]] || { echo "FAIL: -n $np: broken lines:"; cat err; exit 1; }
    grep -qxF "mini5d: rank 0: $msg" err || { echo "FAIL: -n $np: rank 0's line missing:"; cat err; exit 1; }
  done
  echo "ok: -n $np: whole lines, rank 0's present ($(grep -c "^mini5d: rank" err) of $np ranks printed last time)"
done
