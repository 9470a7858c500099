#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Quick start 2: install what is missing, build, and run the whole test suite, the
# `openmp` tests (two threads per rank) included.
# The `slurm` tests run on a real one-node Slurm, which ctest itself starts before them
# and stops after them, pass or fail (the slurm_start and slurm_stop fixture tests; a
# Slurm that was already running is left running). If it does not start, slurm_start
# fails with the daemon's reason, the tests that need it are not run, and the other
# tests still run. The `cluster` tests do the same with the two-tier test cluster
# (scripts/start-cluster.sh: cluster_start, cluster_stop), and are skipped with the
# reason where this machine cannot make network namespaces.
# One build serves every test: Debian's Kokkos is Serial only, so a Kokkos with the
# OpenMP backend (and Serial) is built once from Debian's own source package into .deps/
# (the same Kokkos 3.4 as the packages, reused after), and everything is built on it in
# build-openmp/. ctest runs every test there in one pass: the main suite at one thread
# per rank, and the tests labelled `openmp` at two (docs/testing.md says why one build).
# build/ stays the train command's (scripts/quickstart-train.sh), on Debian's packaged Kokkos.
# A failed Kokkos or build: the tests do not run, and the command exits 1 with the reason.
# At the end, a summary (scripts/test-summary.py, from ctest's JUnit file): the failures,
# the tests skipped and why (a test that lacks what it needs exits 77, which CTest
# reports as skipped, tests/Mini5dTests.cmake), and the ten slowest tests. Under CI=true
# a skip fails the run too, the set-up having installed what the tests need; but for the
# tests whose need no package covers (spack_real: a Spack checkout in SPACK_ROOT;
# test_topology_bind: a second core), and the names in MINI5D_ALLOW_SKIPS (space-separated).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup-debian.sh" --slurm --oracle
build=$root/build-openmp
junit=$build/mini5d-tests.junit.xml
rm -f "$junit"
status=0
if kokkos=$("$root/scripts/build-kokkos-openmp.sh") &&
  BUILD_DIR="$build" "$root/scripts/build.sh" -DKokkos_ROOT="$kokkos" -DKokkosKernels_ROOT="$kokkos" \
    -DCMAKE_PREFIX_PATH="$kokkos"; then
  ctest --test-dir "$build" --output-on-failure -j "$(nproc)" --timeout 600 --output-junit "$junit" || status=1
else
  echo "quickstart-test: the threaded Kokkos or the build in build-openmp/ failed; the tests did not run" >&2
  status=1
fi

summary=()
if [[ ${CI:-} == true ]]; then
  summary=(--ci --allow-skip spack_real --allow-skip test_topology_bind)
  for name in ${MINI5D_ALLOW_SKIPS:-}; do summary+=(--allow-skip "$name"); done
fi
python3 "$root/scripts/test-summary.py" "${summary[@]}" "every test (build-openmp/)=$junit" || status=1
exit $status
