#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The quick start's train command builds only the two apps, not the ~200 test targets
#, and build.sh without TARGET still builds everything. The scripts
# run on a copy of scripts/ whose set-up is a stub, with cmake and mpiexec stubs first on
# PATH that log their arguments: nothing is installed, built or trained.
# usage: quickstart_targets.sh WORKDIR SOURCE_DIR
set -u
work=$1 src=$2
rm -rf "$work" && mkdir -p "$work/root/scripts" "$work/bin" || exit 1
cp "$src/scripts/quickstart-train.sh" "$src/scripts/build.sh" "$work/root/scripts/" || exit 1
log=$work/calls.log
printf '#!/bin/sh\nexit 0\n' > "$work/root/scripts/setup-debian.sh"
for tool in cmake mpiexec; do
  printf '#!/bin/sh\necho "%s $*" >> "%s"\n' "$tool" "$log" > "$work/bin/$tool"
done
chmod +x "$work/root/scripts/"*.sh "$work/bin/"*
fail() { echo "FAIL: $*"; echo "calls:"; cat "$log"; exit 1; }

: > "$log"
PATH=$work/bin:$PATH "$work/root/scripts/quickstart-train.sh" train.steps=3 || fail "quickstart-train.sh exited $?"
build=$(grep '^cmake --build' "$log") || fail "no cmake --build call"
[[ $build == *" --target mini5d-app mini5d-plan" ]] || fail "train builds more than the two apps: $build"
grep -q "^mpiexec -n 1 $work/root/build/apps/mini5d train train.steps=3\$" "$log" || fail "the app was not run"

: > "$log"
PATH=$work/bin:$PATH "$work/root/scripts/build.sh" || fail "build.sh exited $?"
build=$(grep '^cmake --build' "$log") || fail "no cmake --build call"
[[ $build != *--target* ]] || fail "build.sh without TARGET builds only some targets: $build"

: > "$log"
PATH=$work/bin:$PATH TARGET=test_moe "$work/root/scripts/build.sh" || fail "build.sh exited $?"
build=$(grep '^cmake --build' "$log") || fail "no cmake --build call"
[[ $build == *" --target test_moe" ]] || fail "TARGET=test_moe not passed: $build"
echo "ok: the train quick start builds mini5d-app and mini5d-plan only"
