#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# One app oracle case: the fp64 dump of the deck (its tokens and initial parameters),
# then `mini5d train` in fp32 on NP ranks with the given layout, a checkpoint after
# every step, then check_app.py replays every step with the PyTorch reference model.
# usage: oracle_app.sh WORKDIR DRIVER MPIEXEC APP LABEL NP DECK [section.field=value ...] [-- app-only ...]
#   The overrides before `--` go to both runs; those after it to the app alone: the
#   layout, and train.micro_batch = (the dump's micro_batch) / (d x e), so that the
#   global batch, and with it every step's sequences, is the dump's.
set -euo pipefail
work=$1 driver=$2 mpiexec=$3 app=$4 label=$5 np=$6 deck=$7
shift 7
here=$(cd "$(dirname "$0")" && pwd)
if ! /usr/bin/python3 -c 'import torch, numpy, h5py' 2>/dev/null; then
  echo "SKIP: /usr/bin/python3 lacks torch or h5py (scripts/setup-debian.sh --oracle installs them)"
  exit 77
fi
common=() layout=() after=0
for o in "$@"; do
  if [[ $o == -- ]]; then after=1; elif ((after)); then layout+=("$o"); else common+=("$o"); fi
done
rm -rf "$work" && mkdir -p "$work/dump"
"$driver" "$deck" "$work/dump" "${common[@]}"
steps=$(/usr/bin/python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["steps_run"]))' "$work/dump/meta.json")
(cd "$work" && "$mpiexec" -n "$np" "$app" train "$deck" "${common[@]}" "${layout[@]}" \
  checkpoint.every=1 checkpoint.keep=$((steps + 1)) checkpoint.dir=ck output.report=report.json output.log_every=1000 \
  > train.log 2>&1) || { cat "$work/train.log"; echo "oracle_app: the app failed"; exit 1; }
OMP_NUM_THREADS=1 /usr/bin/python3 "$here/check_app.py" "$work/dump" "$work/ck" "$work/report.json" --label "$label"
