#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs a command that must succeed and print each expected line exactly once on stdout
# (once also under mpiexec, where only rank 0 may print).
# usage: expect_output.sh "expected text" ... -- command args...
set -u
expected=()
while [[ $# -gt 0 && $1 != "--" ]]; do expected+=("$1"); shift; done
shift  # the --
out=$("$@" 2>&1); status=$?
if [[ $status -ne 0 ]]; then
  echo "FAIL: exit status $status, expected 0; output was:"; echo "$out"; exit 1
fi
for e in "${expected[@]}"; do
  count=$(printf '%s\n' "$out" | grep -cF -- "$e")
  if [[ $count -ne 1 ]]; then
    echo "FAIL: expected text found $count times, expected once: $e"; echo "output:"; echo "$out"; exit 1
  fi
done
echo "ok: ${#expected[@]} expected lines, each once"
