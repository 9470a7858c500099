#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Quick start 2: install what is missing, build, and run the whole test suite.
# The `slurm` tests run on a real one-node Slurm: started here (scripts/start-slurm.sh)
# and stopped on the way out, whether or not the tests pass. If it does not start, the
# other tests still run and the slurm tests fail with the daemon's reason.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup-debian.sh" --slurm
"$root/scripts/build.sh"
start_out=$("$root/scripts/start-slurm.sh" 2>&1) || true
echo "$start_out"
if [[ $start_out != *"already running"* ]]; then  # one we started: ours to stop
  trap '"$root/scripts/stop-slurm.sh"' EXIT
fi
ctest --test-dir "$root/build" --output-on-failure -j "$(nproc)" --timeout 600
