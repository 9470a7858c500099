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
# Every stage runs, whatever the one before it gave: a failing main suite still lets the
# `openmp` stage run, and the command then exits 1. At the end, one summary per stage
# (scripts/test-summary.py, from ctest's JUnit files): the failures, the tests skipped
# and why (a test that lacks what it needs exits 77, which CTest reports as skipped,
# tests/Mini5dTests.cmake), and the ten slowest tests. Under CI=true a skip fails the
# run too, the set-up having installed what the tests need; but for the tests whose
# need no package covers (spack_real: a Spack checkout in SPACK_ROOT; test_topology_bind:
# a second core), and the names in MINI5D_ALLOW_SKIPS (space-separated).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup-debian.sh" --slurm --oracle
junit_main=$root/build/mini5d-tests.junit.xml junit_openmp=$root/build-openmp/mini5d-tests.junit.xml
rm -f "$junit_main" "$junit_openmp"
status=0
if "$root/scripts/build.sh"; then
  ctest --test-dir "$root/build" --output-on-failure -j "$(nproc)" --timeout 600 --output-junit "$junit_main" ||
    status=1
else
  echo "quickstart-test: the build in build/ failed; its tests did not run" >&2
  status=1
fi

if kokkos=$("$root/scripts/build-kokkos-openmp.sh") &&
  BUILD_DIR="$root/build-openmp" TARGET=mini5d-openmp-tests "$root/scripts/build.sh" -DKokkos_ROOT="$kokkos" \
    -DKokkosKernels_ROOT="$kokkos" -DCMAKE_PREFIX_PATH="$kokkos" -DMINI5D_SLURM_TESTS=OFF -DMINI5D_CLUSTER_TESTS=OFF; then
  ctest --test-dir "$root/build-openmp" -L openmp --output-on-failure -j "$(nproc)" --timeout 600 \
    --output-junit "$junit_openmp" || status=1
else
  echo "quickstart-test: the threaded Kokkos or the build in build-openmp/ failed; the openmp tests did not run" >&2
  status=1
fi

summary=()
if [[ ${CI:-} == true ]]; then
  summary=(--ci --allow-skip spack_real --allow-skip test_topology_bind)
  for name in ${MINI5D_ALLOW_SKIPS:-}; do summary+=(--allow-skip "$name"); done
fi
python3 "$root/scripts/test-summary.py" "${summary[@]}" "main (build/)=$junit_main" \
  "openmp (build-openmp/)=$junit_openmp" || status=1
exit $status
