#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# `cmake --install` into a staging prefix, then a small downstream
# project (tests/install/downstream) configured against it with only
# CMAKE_PREFIX_PATH: find_package(mini5d) must work, the tool must build and run and
# print what the libraries computed, and the installed mini5d and mini5d-plan must run.
# The installed config records the build's Kokkos_DIR, and find_package(mini5d QUIET)
# survives a missing dependency (tests/install/quiet).
# usage: check_install.sh WORKDIR BUILD_DIR SOURCE_DIR
set -u
work=$1 build=$2 src=$3
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work" && mkdir -p "$work" || exit 1
stage=$work/stage
cmake --install "$build" --prefix "$stage" > "$work/install.log" 2>&1 || { tail -n 20 "$work/install.log"; fail "cmake --install"; }
for f in bin/mini5d bin/mini5d-plan lib/cmake/mini5d/mini5dConfig.cmake lib/cmake/mini5d/mini5dTargets.cmake \
         include/mini5d/core/deck.hpp include/mini5d/plan/search/search.hpp; do
  [[ -e $stage/$f ]] || fail "the install lacks $f"
done
[[ -e $stage/include/mini5d/core/deck.cpp ]] && fail "sources installed as headers"
"$stage/bin/mini5d" version > "$work/version.out" 2>&1 || { cat "$work/version.out"; fail "installed mini5d does not run"; }
"$stage/bin/mini5d-plan" --model "$src/inputs/tiny.yaml" --cluster "$src/inputs/clusters/cpu-2core.yaml" \
  --global-batch 16 > "$work/plan.out" 2>&1 || { cat "$work/plan.out"; fail "installed mini5d-plan does not run"; }
# The downstream project sees the staged prefix only (not the source or build tree).
cmake -S "$src/tests/install/downstream" -B "$work/downstream" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$stage" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON > "$work/configure.log" 2>&1 || { tail -n 30 "$work/configure.log"; fail "configuring the downstream project"; }
grep -q "mini5d_DIR:PATH=$stage/lib/cmake/mini5d" "$work/downstream/CMakeCache.txt" || fail "find_package(mini5d) did not use the staged install"
cmake --build "$work/downstream" -j2 > "$work/build.log" 2>&1 || { tail -n 30 "$work/build.log"; fail "building the downstream project"; }
grep -qE -- "(-I|-isystem )$src/src " "$work/downstream/compile_commands.json" && fail "the downstream build used the source tree's headers"
grep -qE -- "(-I|-isystem )$stage/include " "$work/downstream/compile_commands.json" || fail "the downstream build did not use the staged headers"
# stdout only: a threaded Kokkos may warn on stderr (OMP_PROC_BIND unset), which is not the tool's answer.
out=$("$work/downstream/downstream" "$src/inputs/clusters/cpu-2core.yaml" "$src/inputs/tiny.yaml" 2> "$work/downstream.err") ||
  { echo "$out"; cat "$work/downstream.err"; fail "the downstream tool failed"; }
expect="downstream: deck d_model 64 d 2; best plan on cpu-2core: d=2 "
[[ $out == "$expect"* ]] || fail "downstream printed '$out', expected '$expect...'"
# The Kokkos the build used is recorded in the installed config as a fallback (HINTS).
kokkos_dir=$(sed -n 's/^Kokkos_DIR:PATH=//p' "$build/CMakeCache.txt")
[[ -n $kokkos_dir ]] && { grep -qF "$kokkos_dir" "$stage/lib/cmake/mini5d/mini5dConfig.cmake" ||
  fail "the installed mini5dConfig.cmake does not record Kokkos_DIR=$kokkos_dir"; }
# hwloc hidden from pkg-config: find_package(mini5d QUIET) leaves the configure going with
# mini5d_FOUND false and the reason; REQUIRED stops it with the same reason.
mkdir -p "$work/no-pkgconfig"
PKG_CONFIG_LIBDIR=$work/no-pkgconfig PKG_CONFIG_PATH= cmake -S "$src/tests/install/quiet" -B "$work/quiet" \
  -DCMAKE_PREFIX_PATH="$stage" > "$work/quiet.log" 2>&1 || { tail -n 30 "$work/quiet.log"; fail "find_package(mini5d QUIET) stopped the configure (hwloc missing)"; }
grep -q "quiet-test: mini5d not found: .*hwloc" "$work/quiet.log" || { tail -n 30 "$work/quiet.log"; fail "find_package(mini5d QUIET) without hwloc: mini5d_FOUND not false with the reason"; }
PKG_CONFIG_LIBDIR=$work/no-pkgconfig PKG_CONFIG_PATH= cmake -S "$src/tests/install/quiet" -B "$work/required" \
  -DCMAKE_PREFIX_PATH="$stage" -DQUIET_TEST_REQUIRED=ON > "$work/required.log" 2>&1 && fail "find_package(mini5d REQUIRED) passed without hwloc"
grep -q "hwloc" "$work/required.log" || { tail -n 30 "$work/required.log"; fail "find_package(mini5d REQUIRED) without hwloc failed without naming it"; }
echo "ok: staged install; find_package(mini5d) from $stage; $out; QUIET without hwloc: not found, configure goes on; REQUIRED: stops"
