#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Quick start 1: install what is missing, build, and train on the built-in default deck
# (a 4-block GPT on a synthetic Markov source; about a minute on one core).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup-debian.sh"
# Only the two apps: the ~200 test targets are quickstart-test.sh's to build (on a busy
# 2-core machine they took most of half an hour before a single step trained).
TARGET="mini5d-app mini5d-plan" "$root/scripts/build.sh"
cd "$root"
# One rank owning one core: BLAS threads must not oversubscribe it.
OPENBLAS_NUM_THREADS=1 mpiexec -n 1 "$root/build/apps/mini5d" train "$@"
