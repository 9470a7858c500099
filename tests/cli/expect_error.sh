#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs a command that must fail on bad input: exit status 2, the expected message on
# stderr exactly once (rank 0 only, even under mpiexec), and no crash.
# usage: expect_error.sh "expected message" command args...
set -u
expected=$1; shift
err=$("$@" 2>&1 >/dev/null); status=$?
count=$(printf '%s\n' "$err" | grep -cF -- "$expected")
if [[ $status -ne 2 ]]; then
  echo "FAIL: exit status $status, expected 2; stderr was:"; echo "$err"; exit 1
fi
if [[ $count -ne 1 ]]; then
  echo "FAIL: expected message printed $count times, expected once: $expected"; echo "stderr:"; echo "$err"; exit 1
fi
echo "ok: status 2, message once: $expected"
