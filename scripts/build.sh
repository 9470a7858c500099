#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Configures and builds mini5d (Release) with all cores, in build/ or $BUILD_DIR.
# usage: [BUILD_DIR=dir] [TARGET="target ..."] scripts/build.sh [extra cmake -D options]
# (TARGET: build only those targets, space-separated, e.g. test_moe, or
# "mini5d-app mini5d-plan" for the two apps alone; default: everything)
# Tuned for this machine (-DMINI5D_NATIVE=ON, overridable): the quick start builds where it runs.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DMINI5D_NATIVE=ON "$@"
read -r -a targets <<<"${TARGET:-}"
cmake --build "$build" -j "$(nproc)" ${targets[@]:+--target "${targets[@]}"}
