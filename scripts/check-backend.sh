#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds mini5d against a given Kokkos / Kokkos Kernels install in its own build folder,
# runs the tests where the backend can run on this machine, and prints a one-line verdict.
# usage: scripts/check-backend.sh KOKKOS_ROOT KOKKOSKERNELS_ROOT [CXX]
#   CXX: the C++ compiler; for a CUDA Kokkos the default is KOKKOS_ROOT/bin/nvcc_wrapper,
#   for a HIP Kokkos hipcc from PATH (Debian 12: apt-get install hipcc libamdhip64-dev rocm-device-libs).
# Environment: BUILD_DIR (default build-check-<backend>), JOBS (default: all cores),
#   CTEST_ARGS (extra ctest arguments, e.g. "-R test_comm").
# Verdict line: "check-backend: <backend> Kokkos <version>: configure ok, build ok, tests
# N/M passed" or "... FAILED at <stage> (log: <file>)". Exit status 0 only when every
# stage that could run passed; a GPU backend on a machine without a GPU builds only.
set -uo pipefail
if [[ $# -lt 2 || $# -gt 3 ]]; then
  sed -n '3,11p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
kokkos=$(cd "$1" && pwd) || { echo "check-backend: no such directory: $1"; exit 2; }
kernels=$(cd "$2" && pwd) || { echo "check-backend: no such directory: $2"; exit 2; }

# The backend, from the installed Kokkos configuration header.
config=$(find "$kokkos" -name KokkosCore_config.h -print -quit 2>/dev/null)
[[ -n "$config" ]] || { echo "check-backend: KokkosCore_config.h not found under $kokkos"; exit 2; }
backend=host
for b in CUDA HIP SYCL OPENMP THREADS SERIAL; do
  if grep -q "^#define KOKKOS_ENABLE_$b\b" "$config"; then backend=$(echo "$b" | tr 'A-Z' 'a-z'); break; fi
done
version=$(sed -n 's/^#define KOKKOS_VERSION \([0-9]*\).*/\1/p' "$config")
[[ -n "$version" ]] && version="$((version / 10000)).$((version / 100 % 100)).$((version % 100))"

cxx=${3:-}
if [[ -z "$cxx" && $backend == cuda ]]; then cxx="$kokkos/bin/nvcc_wrapper"; fi
if [[ -z "$cxx" && $backend == hip ]]; then cxx=$(command -v hipcc || true); fi
build=${BUILD_DIR:-$root/build-check-$backend}
jobs=${JOBS:-$(nproc)}
mkdir -p "$build"
log="$build/check-backend.log"
: >"$log"
verdict() { echo "check-backend: $backend Kokkos ${version:-?}: $*"; }

args=(-S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release
      -DKokkos_ROOT="$kokkos" -DKokkosKernels_ROOT="$kernels"
      -DCMAKE_PREFIX_PATH="$kokkos;$kernels")
[[ -n "$cxx" ]] && args+=(-DCMAKE_CXX_COMPILER="$cxx")
# nvcc only warns when device code calls a host function (#20011, #20014; #20012: a
# __host__ __device__ annotation ignored on a defaulted function), yet on a GPU such a
# call is undefined: on CUDA they are errors here, so the build fails on one.
# nvcc_wrapper compiles for sm_70 unless it is given an -arch (Kokkos 4.6 reads no
# variable for it), and CMake's compiler check gets no Kokkos flags: nvcc 13 has no
# sm_70, so the check would fail. Give it the architecture this Kokkos was built for.
if [[ $backend == cuda ]]; then
  # One -Xcudafe per number: nvcc splits an -Xcudafe value at its commas.
  flags="-Xcudafe --diag_error=20011 -Xcudafe --diag_error=20012 -Xcudafe --diag_error=20014"
  sm=$(sed -nE 's/^#define KOKKOS_ARCH_(KEPLER|MAXWELL|PASCAL|VOLTA|TURING|AMPERE|ADA|HOPPER|BLACKWELL)([0-9]+)$/\2/p' \
    "$config" | head -1)
  [[ -n "$sm" ]] && flags+=" -arch=sm_$sm"
  args+=(-DCMAKE_CXX_FLAGS="$flags")
fi
# HIP (clang): a device function calling a host one is already an error when clang
# emits the device code; what is left are clang's warnings, which must be none (the
# verdict counts them), so on HIP every warning is an error. That includes -Wpedantic
# (mini5d_warnings), so MINI5D_PEDANTIC_ERRORS' -pedantic-errors would add nothing.
if [[ $backend == hip ]]; then
  args+=(-DCMAKE_CXX_FLAGS="-Werror" -DMINI5D_PEDANTIC_ERRORS=OFF)
fi
echo "== cmake ${args[*]}" >>"$log"
if ! cmake "${args[@]}" >>"$log" 2>&1; then verdict "FAILED at configure (log: $log)"; exit 1; fi
if ! cmake --build "$build" -j "$jobs" >>"$log" 2>&1; then verdict "configure ok, FAILED at build (log: $log)"; exit 1; fi
warnings=$(grep -c "warning:" "$log" || true)

# Tests: host backends always; a GPU backend only where a GPU of its kind is visible.
can_run=yes
case $backend in
  cuda) command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 || can_run="no GPU" ;;
  hip) command -v rocm-smi >/dev/null && rocm-smi >/dev/null 2>&1 || can_run="no GPU" ;;
  sycl) can_run="not tried for SYCL" ;;
esac
if [[ $can_run != yes ]]; then
  verdict "configure ok, build ok ($warnings warnings), tests not run ($can_run)"
  exit 0
fi
# shellcheck disable=SC2086
ctest --test-dir "$build" --timeout 600 -j "$jobs" ${CTEST_ARGS:-} >>"$log" 2>&1
summary=$(grep -E "tests passed, [0-9]+ tests failed out of" "$log" | tail -1)
total=$(echo "$summary" | sed -n 's/.*out of \([0-9]*\).*/\1/p')
failed=$(echo "$summary" | sed -n 's/.*passed, \([0-9]*\) tests failed.*/\1/p')
if [[ -z "$total" ]]; then verdict "configure ok, build ok, FAILED at test (log: $log)"; exit 1; fi
if [[ "$failed" != 0 ]]; then
  verdict "configure ok, build ok ($warnings warnings), tests $((total - failed))/$total passed, FAILED (log: $log)"
  exit 1
fi
verdict "configure ok, build ok ($warnings warnings), tests $total/$total passed"
