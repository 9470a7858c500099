#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Saves a checkpoint, flips one byte of /model/wte's data in the file, then expects
# `mini5d ckpt verify` (under mpiexec) to fail naming that dataset, once.
# usage: ckpt_flipped.sh WORKDIR MPIEXEC NP_FLAG CKPT_TOOL EXPECT_ERROR MINI5D_APP
set -u
work=$1 mpiexec=$2 npflag=$3 tool=$4 expect=$5 app=$6
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
"$mpiexec" "$npflag" 2 "$tool" write ck step-00000002 2 7 0 || exit 1
"$tool" flip ck/step-00000002.h5 /model/wte 100 || exit 1
exec "$expect" "ck/step-00000002.h5: checksum mismatch in dataset /model/wte (stored 0x" \
  "$mpiexec" "$npflag" 2 "$app" ckpt verify ck
