#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Configures and builds mini5d (Release) in build/ with all cores.
# usage: scripts/build.sh [extra cmake -D options]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build "$root/build" -j "$(nproc)"
