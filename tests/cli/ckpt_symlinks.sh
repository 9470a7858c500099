#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A checkpoint file or `latest` that is a symbolic link (to another run's file) is
# refused by `ckpt verify`, `ckpt info` and a resume alike, one line naming it, exit 2.
# It used to be verified and resumed: the other run's state continued under this run.
# usage: ckpt_symlinks.sh WORKDIR EXPECT_ERROR MINI5D_APP DECK
set -u
work=$1 expect=$2 app=$3 deck=$4
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
for r in a b; do
  "$app" train "$deck" train.steps=2 checkpoint.at_end=true checkpoint.dir=ck-$r output.report= \
    > $r.out 2>&1 || { cat $r.out; exit 1; }
done
# The step file of run b, a link to run a's file.
rm ck-b/step-00000002.h5 && ln -s ../ck-a/step-00000002.h5 ck-b/step-00000002.h5
msg="ck-b/latest: points to ck-b/step-00000002.h5: is a symbolic link; a checkpoint must be a regular file in its checkpoint directory"
"$expect" "$msg" "$app" ckpt verify ck-b || exit 1
"$expect" "$msg" "$app" ckpt info ck-b || exit 1
"$expect" "$msg" "$app" train "$deck" train.steps=4 checkpoint.dir=ck-b resume=latest output.report= || exit 1
"$expect" "ck-b/step-00000002.h5: is a symbolic link" "$app" ckpt verify ck-b/step-00000002.h5 || exit 1
# `latest` itself a link to run a's pointer.
mkdir ck-c && ln -s ../ck-a/latest ck-c/latest && cp ck-a/step-00000002.h5 ck-c/
msg="ck-c/latest: is a symbolic link; a 'latest' pointer must be a regular file in its checkpoint directory"
"$expect" "$msg" "$app" ckpt verify ck-c || exit 1
"$expect" "$msg" "$app" train "$deck" train.steps=4 checkpoint.dir=ck-c resume=latest output.report= || exit 1
echo "ok: linked checkpoint files and pointers refused by verify, info and resume"
