#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Reads a mini5d checkpoint with h5py (no mini5d code): attributes, exact values, and
# every dataset's checksum recomputed from the documented formula. Exit 77 (skipped)
# when no Python with h5py is found (scripts/setup-debian.sh installs python3-h5py).
# usage: ckpt_h5py.sh WORKDIR MPIEXEC NP_FLAG CKPT_TOOL
set -u
work=$1 mpiexec=$2 npflag=$3 tool=$4
here=$(cd "$(dirname "$0")" && pwd)
source "$(dirname "$0")/lib.sh"
need_h5py
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
"$mpiexec" "$npflag" 2 "$tool" write ck step-00000006 6 66 0 || exit 1
exec "$py" "$here/ckpt_h5py.py" ck/step-00000006.h5 6 66
