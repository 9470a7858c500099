#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# `cmake --install` into a staging prefix, then a small downstream
# project (tests/install/downstream) configured against it with only
# CMAKE_PREFIX_PATH: find_package(mini5d) must work, the tool must build and run and
# print what the libraries computed, and the installed mini5d and mini5d-plan must run.
# usage: check_install.sh WORKDIR BUILD_DIR SOURCE_DIR
set -u
work=$1 build=$2 src=$3
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work" && mkdir -p "$work" || exit 1
stage=$work/stage
cmake --install "$build" --prefix "$stage" > "$work/install.log" 2>&1 || { tail -n 20 "$work/install.log"; fail "cmake --install"; }
for f in bin/mini5d bin/mini5d-plan lib/cmake/mini5d/mini5dConfig.cmake lib/cmake/mini5d/mini5dTargets.cmake \
         include/mini5d/core/deck.hpp include/mini5d/plan/search.hpp; do
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
out=$("$work/downstream/downstream" "$src/inputs/clusters/cpu-2core.yaml" "$src/inputs/tiny.yaml" 2>&1) ||
  { echo "$out"; fail "the downstream tool failed"; }
expect="downstream: deck d_model 64 d 2; best plan on cpu-2core: d=2 "
[[ $out == "$expect"* ]] || fail "downstream printed '$out', expected '$expect...'"
echo "ok: staged install; find_package(mini5d) from $stage; $out"
