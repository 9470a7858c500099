#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Quick start 2: install what is missing, build, and run the whole test suite.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup-debian.sh"
"$root/scripts/build.sh"
ctest --test-dir "$root/build" --output-on-failure -j "$(nproc)" --timeout 600
