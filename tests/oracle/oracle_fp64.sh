#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# One fp64 oracle case: mini5d trains the deck in fp64 (mini5d_oracle_fp64), then
# check_fp64.py replays it with the PyTorch reference model and compares every step.
# usage: oracle_fp64.sh WORKDIR DRIVER LABEL DECK [section.field=value ...]
set -euo pipefail
work=$1 driver=$2 label=$3 deck=$4
shift 4
here=$(cd "$(dirname "$0")" && pwd)
if ! /usr/bin/python3 -c 'import torch, numpy' 2>/dev/null; then
  echo "SKIP: /usr/bin/python3 has no torch (Debian's python3-torch; scripts/setup-debian.sh installs it)"
  exit 77
fi
rm -rf "$work" && mkdir -p "$work"
"$driver" "$deck" "$work" "$@"
OMP_NUM_THREADS=1 /usr/bin/python3 "$here/check_fp64.py" "$work" --label "$label"
