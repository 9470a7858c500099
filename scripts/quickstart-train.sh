#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Quick start 1: install what is missing, build, and train on the built-in default deck
# (a 4-block GPT on a synthetic Markov source; about a minute on one core).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup-debian.sh"
"$root/scripts/build.sh"
cd "$root"
# One rank owning one core: BLAS threads must not oversubscribe it.
OPENBLAS_NUM_THREADS=1 mpiexec -n 1 "$root/build/apps/mini5d" train "$@"
