#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Quick start 2: install what is missing, build, and run the whole test suite; then
# the same code on a threaded Kokkos, for the `openmp` tests.
# The `slurm` tests run on a real one-node Slurm, which ctest itself starts before them
# and stops after them, pass or fail (the slurm_start and slurm_stop fixture tests; a
# Slurm that was already running is left running). If it does not start, slurm_start
# fails with the daemon's reason, the tests that need it are not run, and the other
# tests still run. The `cluster` tests do the same with the two-tier test cluster
# (scripts/start-cluster.sh: cluster_start, cluster_stop), and are skipped with the
# reason where this machine cannot make network namespaces.
# The `openmp` tests: Debian's Kokkos is Serial only, so a Kokkos with the OpenMP
# backend is built once from Debian's own source package into .deps/ (reused after),
# the tests labelled `openmp` are built on it in build-openmp/ (target
# mini5d-openmp-tests: only those) and run there at two threads per rank (docs/testing.md).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup-debian.sh" --slurm
"$root/scripts/build.sh"
ctest --test-dir "$root/build" --output-on-failure -j "$(nproc)" --timeout 600

kokkos=$("$root/scripts/build-kokkos-openmp.sh")
BUILD_DIR="$root/build-openmp" TARGET=mini5d-openmp-tests "$root/scripts/build.sh" -DKokkos_ROOT="$kokkos" -DKokkosKernels_ROOT="$kokkos" \
  -DCMAKE_PREFIX_PATH="$kokkos" -DMINI5D_SLURM_TESTS=OFF -DMINI5D_CLUSTER_TESTS=OFF
ctest --test-dir "$root/build-openmp" -L openmp --output-on-failure -j "$(nproc)" --timeout 600
